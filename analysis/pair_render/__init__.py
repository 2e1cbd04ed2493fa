"""Renderers of pair README tables that no column list can say (pair_table.py --all)."""
