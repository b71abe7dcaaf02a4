"""Tag helpers."""


def normalize(tag):
    return tag.lower()


def unique(tags):
    return list(set(tags))
