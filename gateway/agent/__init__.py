"""The built-in scripted agent: a real upstream in every dialect, for tests and the demo."""
