"""Tests that keep the documentation true: the API reference, the pages' Python snippets, their paths and lists."""
