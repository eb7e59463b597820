"""``capacity.py``'s pacing: by default the figure's (turns started over max(1, N / 200) s, each
session streaming ``--seconds``); with ``--starts-per-second`` the starts spread further and each
session streams that much longer, so that all of them still stream at once for ``--seconds`` less
one."""

from __future__ import annotations

from benchmarks.capacity import _chunks, _stagger, search_arguments


def _args(*argv: str):
    return search_arguments("test", most=800).parse_args(list(argv))


def test_the_default_is_the_figures_setting() -> None:
    args = _args()
    assert args.starts_per_second is None
    assert _stagger(100, args) == 1.0 and _stagger(300, args) == 1.5
    assert _chunks(_stagger(300, args), args) == 80  # 20 chunks/s for 4 s, whatever the start


def test_a_slower_start_streams_each_session_as_much_longer() -> None:
    args = _args("--starts-per-second", "50")
    stagger = _stagger(300, args)
    assert stagger == 6.0
    count = _chunks(stagger, args)
    assert count == 20 * (4 + 5)
    # The last session starts ``stagger`` after the first; the first ends count / rate after its
    # start: every session streams at once for --seconds less one.
    assert count / 20 - stagger == 4 - 1
