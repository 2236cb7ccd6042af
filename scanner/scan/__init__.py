"""Findings about the corpus itself: the golden-queries-quoted check, each rule of decision 0006 one function."""
