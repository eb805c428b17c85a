"""Reverse construction: datasets of tasks and page QA built from exploration runs."""
