"""Thin entry points over the plain functions: the `scalehop` CLI and (later) the Prefect flows."""
