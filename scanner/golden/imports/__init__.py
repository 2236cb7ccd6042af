"""Judgments written for other tools, read into kb-eval's golden format (`kb-eval import`).

One module per source format (`trec`: TREC qrels with a queries file; `quepid`: Quepid's ratings
CSV), each producing the same records (`records`), and one writer of the golden file (`write`).
Every refusal names the file, the line and the field.
"""
