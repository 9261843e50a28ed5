"""Stock levels per item, with reservations that can never overdraw them."""


class OutOfStock(Exception):
    """Raised when a reservation asks for more than is on hand."""

    def __init__(self, item: str, wanted: int, available: int) -> None:
        super().__init__(f"{item}: wanted {wanted}, only {available} available")
        self.item = item
        self.wanted = wanted
        self.available = available


class Stock:
    def __init__(self) -> None:
        self._on_hand: dict[str, int] = {}

    def receive(self, item: str, quantity: int) -> None:
        if quantity <= 0:
            raise ValueError("quantity must be positive")
        self._on_hand[item] = self._on_hand.get(item, 0) + quantity

    def reserve(self, item: str, quantity: int) -> int:
        """Takes `quantity` of `item` and returns what is left."""
        available = self._on_hand.get(item, 0)
        if quantity > available:
            raise OutOfStock(item, quantity, available)
        self._on_hand[item] = available - quantity
        return self._on_hand[item]

    def on_hand(self, item: str) -> int:
        return self._on_hand.get(item, 0)
