"""The bounded, ranked catalogue: what makes the cut, in what order, and what the tail says."""

from __future__ import annotations

from host.runtime.catalogue import CatalogueItem, catalogue, closest, short_description

ITEMS = [CatalogueItem(f"kit:{name}", text) for name, text in (
    ("lint", "Runs the linters. Then it reports what they found."),
    ("deploy", "Deploys services to Kubernetes clusters with rolling updates."),
    ("docs", "Writes documentation pages for a module."),
    ("empty", ""),
)]
MORE = "- ... and {count} more"


def test_entries_keep_their_order_with_nothing_to_rank_by_and_each_shows_its_first_sentence() -> None:
    assert catalogue(ITEMS, budget=10_000, more=MORE).splitlines() == [
        "- kit:lint: Runs the linters.",
        "- kit:deploy: Deploys services to Kubernetes clusters with rolling updates.",
        "- kit:docs: Writes documentation pages for a module.",
        "- kit:empty",
    ]


def test_used_entries_come_first_then_those_matching_the_message() -> None:
    listing = catalogue(ITEMS, budget=10_000, query="please update the documentation pages", used=["kit:empty"], more=MORE)
    assert [line.split(":")[1] for line in listing.splitlines()] == ["empty", "docs", "lint", "deploy"]


def test_the_budget_cuts_the_listing_and_the_tail_counts_what_was_left_out() -> None:
    listing = catalogue(ITEMS, budget=80, query="kubernetes", more=MORE)
    assert listing.splitlines() == ["- kit:deploy: Deploys services to Kubernetes clusters with rolling updates.",
                                    "- ... and 3 more"]
    assert len(listing.splitlines()[0].encode()) + 1 <= 80


def test_long_descriptions_are_cut_on_one_line() -> None:
    text = short_description("word " * 100 + "\n\nsecond paragraph")
    assert len(text) == 160 and text.endswith("…") and "\n" not in text


def test_closest_finds_by_part_of_a_name_or_by_words_of_the_description() -> None:
    assert [i.name for i in closest(ITEMS, "deploy")] == ["kit:deploy"]
    assert [i.name for i in closest(ITEMS, "kubernetes rollout")] == ["kit:deploy"]
    assert closest(ITEMS, "quantum") == []
