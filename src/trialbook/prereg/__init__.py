"""Preregistered confirmation runs: a seeded held-out split and a fixed decision rule."""
