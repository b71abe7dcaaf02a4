from textwrap2 import count_words, shorten_words


def test_count_words():
    assert count_words("a b  c") == 3


def test_short_text_unchanged():
    assert shorten_words("one two", 5) == "one two"


def test_shorten_keeps_n_words():
    assert shorten_words("one two three four", 2) == "one two..."
