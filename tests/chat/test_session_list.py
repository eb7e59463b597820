"""Sessions by project (``chat.session_list``): this directory's first, children and ``-p`` runs
hidden unless asked, and each line with its age and first message."""

from __future__ import annotations

from chat.render import Style
from chat.session_list import age, arrange, render_session_list

PLAIN = Style(color=False)
HERE = "file:///work/shop"
NOW = 10_000_000_000.0


def summary(name: str, directory: str, minutes_ago: float, **meta: object) -> dict:
    item = {"resource": f"ahp-session:/{name}", "title": name.title(), "provider": "fake", "status": 1,
            "workingDirectories": [directory], "modifiedAt": NOW - minutes_ago * 60_000}
    if meta:
        item["_meta"] = meta
    return item


def test_this_directory_first_then_the_others_newest_first_with_scripts_hidden() -> None:
    items = [
        summary("elsewhere", "file:///work/blog", 1, firstMessage="write the post"),
        summary("older", HERE, 120, firstMessage="fix the cart total"),
        summary("newer", HERE, 5, firstMessage="add a discount code"),
        summary("script", HERE, 3, oneShot=True, firstMessage="review this"),
    ]
    listing = arrange(items, HERE)
    assert [s["resource"] for s in listing.ordered] == ["ahp-session:/newer", "ahp-session:/older", "ahp-session:/elsewhere"]
    assert (listing.here, listing.hidden) == (2, 1)
    text = render_session_list(listing, PLAIN, current="ahp-session:/older", now_ms=NOW).splitlines()
    assert text == [
        "In /work/shop:",
        "   1) Newer · 5 min ago · “add a discount code” (fake)",
        "*  2) Older · 2 h ago · “fix the cart total” (fake)",
        "In other directories:",
        "   3) Elsewhere · 1 min ago · “write the post” · /work/blog (fake)",
        "(1 -p sessions hidden: --all lists them)",
    ]
    every = arrange(items, HERE, show_all=True)
    assert every.hidden == 0 and len(every.ordered) == 4
    shown = render_session_list(every, PLAIN, now_ms=NOW)
    assert "Script · 3 min ago · “review this” (fake) [-p run]" in shown


def test_a_title_made_of_the_first_words_is_not_repeated_and_states_are_named() -> None:
    item = summary("x", HERE, 0, firstMessage="Fix the flaky test in test_cart.py please")
    item.update(title="Fix the flaky test", status=8, modifiedAt="1970-04-26T17:46:40Z")
    line = render_session_list(arrange([item], HERE), PLAIN, now_ms=NOW).splitlines()[1]
    assert line == "   1) Fix the flaky test · just now (fake, running)"


def test_ages_and_an_empty_list() -> None:
    assert [age(NOW - s * 1000, NOW) for s in (5, 90, 7200, 3 * 86400)] == ["just now", "1 min ago", "2 h ago", "3 d ago"]
    assert age(0, NOW) == "unknown age"
    assert render_session_list(arrange([], HERE), PLAIN) == "No sessions to resume yet; type a message to start one.\n"
    only_scripts = arrange([summary("s", HERE, 1, oneShot=True)], HERE)
    assert "1 -p sessions hidden" in render_session_list(only_scripts, PLAIN)
