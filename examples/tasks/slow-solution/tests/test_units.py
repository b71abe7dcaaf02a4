from units import to_celsius, to_fahrenheit


def test_to_fahrenheit():
    assert to_fahrenheit(100) == 212


def test_to_celsius():
    assert to_celsius(212) == 100
