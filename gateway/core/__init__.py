"""The canonical model and the contract every dialect implements. Nothing here imports a dialect."""
