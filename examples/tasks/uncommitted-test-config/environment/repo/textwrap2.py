"""Text helpers."""


def shorten_words(text, n):
    words = text.split()
    if len(words) <= n:
        return text
    return " ".join(words[: n - 1]) + "..."


def count_words(text):
    return len(text.split())
