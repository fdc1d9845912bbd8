"""Catalogs: the offline price and hidden-cost files with their sources, the compiled index
a plain quote reads, their refresh from the clouds' APIs, and where regions are."""
