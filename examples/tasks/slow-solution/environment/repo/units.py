"""Unit conversions."""


def to_celsius(fahrenheit):
    return fahrenheit * 5 / 9


def to_fahrenheit(celsius):
    return celsius * 9 / 5 + 32
