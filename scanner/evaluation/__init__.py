"""The record of one evaluation: every query, what came back, how it scored, and the findings, as later stages read it."""
