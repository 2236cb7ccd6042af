"""Retrievers: one module per way of answering golden queries, behind `base.Retriever`."""
