"""A tiny stock ledger: the Python project under test."""

from inventory.stock import OutOfStock, Stock

__all__ = ["OutOfStock", "Stock"]
