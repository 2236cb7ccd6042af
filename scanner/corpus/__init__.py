"""The knowledge base on disk: which files it holds, Markdown parsed into documents and sections, the parse cache."""
