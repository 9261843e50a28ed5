import unittest

from inventory import OutOfStock, Stock


class StockTest(unittest.TestCase):
    def setUp(self) -> None:
        self.stock = Stock()
        self.stock.receive("apple", 5)

    def test_receive_adds_to_what_is_on_hand(self) -> None:
        self.stock.receive("apple", 3)
        self.assertEqual(self.stock.on_hand("apple"), 8)

    def test_reserve_returns_what_is_left(self) -> None:
        self.assertEqual(self.stock.reserve("apple", 2), 3)
        self.assertEqual(self.stock.on_hand("apple"), 3)

    def test_reserve_never_overdraws(self) -> None:
        with self.assertRaises(OutOfStock) as raised:
            self.stock.reserve("apple", 6)
        self.assertEqual((raised.exception.wanted, raised.exception.available), (6, 5))
        self.assertEqual(self.stock.on_hand("apple"), 5)

    def test_receive_refuses_nothing(self) -> None:
        with self.assertRaises(ValueError):
            self.stock.receive("pear", 0)


if __name__ == "__main__":
    unittest.main()
