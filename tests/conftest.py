"""Shared pytest configuration."""

from __future__ import annotations

# --- hypothesis settings profiles (owner: engine oracle tests) -------------------------------
# Select with POOLCHECK_HYPOTHESIS_PROFILE=dev|ci|nightly (default: dev). Tests set no
# max_examples of their own, so the profile alone decides how hard the properties are pushed.
import os

from hypothesis import settings

settings.register_profile("dev", max_examples=40, deadline=None)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, print_blob=True)
settings.register_profile("nightly", max_examples=1000, deadline=None)
settings.load_profile(os.environ.get("POOLCHECK_HYPOTHESIS_PROFILE", "dev"))
# --- end hypothesis settings profiles ---------------------------------------------------------
