"""inference/loop_guard.py: a translation that loops where its source does not, searched again
without the loop (the engines' suppression itself: test_search.py, test_ct2_export.py)."""

from inference.contract import LineTranslator
from inference.loop_guard import ROUNDS, has_loop, repetitions, without_loops


def test_a_loop_is_a_word_three_times_in_a_row_or_a_character_five_times():
    assert has_loop("A dog dog dog runs.") and has_loop("a bike bike Bike.") and has_loop("12444455555555555")
    assert has_loop("ECAN DAN DACKADAAAAA.") and has_loop("dog, dog, dog")
    assert not has_loop("A dog, a dog and a dog.") and not has_loop("dog dog") and not has_loop("Aaaah!")
    assert not has_loop("") and not has_loop("Zzzz.")


def test_repetitions_are_the_units_written_twice_and_begun_a_third_time():
    assert repetitions(["▁A", "▁dog", "▁dog", "▁dog", "▁dog", "."]) == [("▁dog", "▁dog", "▁dog")]
    assert repetitions(["▁dog", ",", "▁dog", ",", "▁dog", "."]) == [("▁dog", ",", "▁dog", ",", "▁dog")]
    assert repetitions(["▁a", "▁big", "▁dog", "▁big", "▁dog", "▁big"]) == [("▁big", "▁dog", "▁big", "▁dog", "▁big")]
    assert repetitions(["▁dog", "▁dog", "."]) == [] and repetitions([]) == []
    # case aside, as has_loop reads a loop ("City" alone -> "city City City"), suppressed as written
    assert has_loop("city City City")
    assert repetitions(["▁city", "▁City", "▁City"]) == [("▁city", "▁City", "▁City")]
    assert repetitions(["▁Dog", ",", "▁dog", ",", "▁DOG"]) == [("▁Dog", ",", "▁dog", ",", "▁DOG")]


def test_only_a_looping_translation_of_a_sentence_without_a_loop_is_searched_again():
    looping = [(["▁dog", "▁dog", "▁dog", "▁dog"], -9.0)]
    found = [looping, looping, [(["▁a", "▁cat"], -1.0)], []]
    asked = []

    def search_again(sentences, suppress):
        asked.append((sentences, list(suppress)))
        return [[(["▁dog", "."], -2.0)] for _ in sentences]

    out = without_loops(["Hund", "Hund Hund Hund", "Katze", ""], found, " ".join, search_again)
    assert asked == [(["Hund"], [("▁dog", "▁dog", "▁dog")])]
    assert out == [[(["▁dog", "."], -2.0)], looping, found[2], []]
    assert found[0] == looping  # the caller's list is left as it was


def test_the_sentences_that_loop_are_searched_again_together():
    """One search for all of them, each suppressing what any repeated: a model that loops on
    most inputs is not searched again input by input."""
    asked = []

    def search_again(sentences, suppress):
        asked.append((sentences, list(suppress)))
        return [[(["▁ok"], -1.0)] for _ in sentences]

    found = [[(["▁dog"] * 4, -1.0)], [(["▁a"], -1.0)], [(["▁cat"] * 3, -1.0)]]
    out = without_loops(["Hund", "Ein", "Katze"], found, " ".join, search_again)
    assert asked == [(["Hund", "Katze"], [("▁dog",) * 3, ("▁cat",) * 3])]
    assert out == [[(["▁ok"], -1.0)], found[1], [(["▁ok"], -1.0)]]


def test_each_round_suppresses_what_the_last_repeated_and_the_rounds_are_bounded():
    asked = []

    def search_again(sentences, suppress):
        asked.append(list(suppress))
        word = f"▁w{len(asked)}"
        return [[([word] * 4, -1.0)] for _ in sentences]  # loops again, on another word each time

    [out] = without_loops(["Hund"], [[(["▁dog"] * 4, -1.0)]], " ".join, search_again)
    assert len(asked) == ROUNDS and asked[1] == [("▁dog",) * 3, ("▁w1",) * 3]
    assert out == [([f"▁w{ROUNDS}"] * 4, -1.0)]  # the last search's, loop and all


class ScriptedEngine(LineTranslator):
    """An engine whose search loops on "Hund" unless told to suppress the loop; the
    tokenizer is a real SentencePiece model, for the texts of its pieces."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.truncated, self.calls = tokenizer, 0, []

    def _search(self, sentences, n_best, progress, suppress=()):
        self.calls.append((list(sentences), [tuple(s) for s in suppress]))
        loop = ["▁dog"] * 4
        other = ["▁", "a"]  # pieces every vocabulary has (a small one may not have "▁a")
        return [[(["▁dog", "."] if suppress else loop, -1.0)] if s == "Hund" else [(other, -1.0)] for s in sentences]


def test_a_translator_searches_again_only_what_loops_and_only_as_people_type(trained):
    engine = ScriptedEngine(trained[1])
    assert engine._nbest(["Hund", "Katze"], 1, None) == [[("dog dog dog dog", -1.0)], [("a", -1.0)]]
    assert len(engine.calls) == 1  # each line as the model reads it: no second search
    engine.split_lang, engine.calls = "de", []
    assert engine.translate(["Hund", "Katze"]) == ["dog.", "a"]
    assert engine.calls == [(["Hund", "Katze"], []), (["Hund"], [("▁dog", "▁dog", "▁dog")])]
