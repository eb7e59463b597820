"""UTF-16 offsets as AHP counts them, against Python's code points."""

from ahp.text_offsets import index_to_utf16, utf16_length, utf16_to_index


def test_astral_characters_count_two_units_and_offsets_round_trip() -> None:
    text = "a😀b é"
    assert utf16_length(text) == 6
    for index in range(len(text) + 1):
        assert utf16_to_index(text, index_to_utf16(text, index)) == index
    assert index_to_utf16(text, 2) == 3  # after the emoji
    assert utf16_to_index(text, 2) == 2  # inside the surrogate pair: after the emoji
    assert utf16_to_index(text, 99) == len(text)
