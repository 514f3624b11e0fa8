"""inference/contract.py: what both engines share; here, lines of several sentences translated
sentence by sentence and put back (the engines' own behaviour: test_translator.py,
test_ct2_export.py; translate.py's: test_translate.py)."""

from inference.contract import Progress, by_sentence


def as_typed(sentence: str) -> str:
    return sentence


def stub(sentences: list[str], progress: Progress = None) -> list[list[tuple[str, float]]]:
    """A 'translation' that shows what it was given: each sentence upper-cased, two hypotheses
    (the second with an x), none for a blank one."""
    return [[(s.upper(), -1.0), (s.upper() + "x", -2.0)] if s.strip() else [] for s in sentences]


def test_a_paragraph_is_translated_sentence_by_sentence_and_joined_back_with_its_spacing():
    lines = ["Ein Hund rennt.  Zwei Katzen schlafen!\tWo ist er?", "", "Ein Satz.", "   ", "Hund"]
    given: list[list[str]] = []
    out = by_sentence(lines, "de", lambda sentences, _: given.append(sentences) or stub(sentences), as_typed)
    assert given == [["Ein Hund rennt.", "Zwei Katzen schlafen!", "Wo ist er?", "", "Ein Satz.", "", "Hund"]]
    assert len(out) == len(lines)  # one result a line, in order
    assert out[0] == [
        ("EIN HUND RENNT.  ZWEI KATZEN SCHLAFEN!\tWO IST ER?", -3.0),  # the line's own spacing
        ("EIN HUND RENNT.x  ZWEI KATZEN SCHLAFEN!x\tWO IST ER?x", -6.0),
    ]
    assert out[1] == [] and out[3] == []  # blank lines stay blank
    assert out[2] == stub(["Ein Satz."])[0] and out[4] == stub(["Hund"])[0]  # one sentence: as it is


def test_a_line_break_between_sentences_becomes_a_space():
    """One translation a line: a line separator (U+2028) inside a line does not end it."""
    [out] = by_sentence(["Eins.\u2028Zwei."], "de", stub, as_typed)
    assert out[0][0] == "EINS. ZWEI."


def test_sentences_with_fewer_hypotheses_repeat_their_last():
    def uneven(sentences, _):
        return [[(s, -1.0)] if i == 0 else [(s, -1.0), (s + "?", -3.0)] for i, s in enumerate(sentences)]

    [out] = by_sentence(["Eins. Zwei."], "de", uneven, as_typed)
    assert out == [("Eins. Zwei.", -2.0), ("Eins. Zwei.?", -4.0)]


def test_a_sentence_in_one_case_goes_to_the_model_recased_and_capitals_come_back_in_capitals():
    given: list[list[str]] = []
    out = by_sentence(
        ["EIN MANN FÄHRT FAHRRAD. Zwei Hunde.", "USA", "Ein Hund.", "ein hund rennt", "42"],
        "de",
        lambda s, _: given.append(s) or [[(t, -1.0)] for t in s],
        lambda sentence: f"<{sentence}>",  # what recasing was given, marked
    )
    # "42" has nothing to translate: given back as it is, never read (blank for the model)
    assert given == [["<EIN MANN FÄHRT FAHRRAD.>", "Zwei Hunde.", "<USA>", "Ein Hund.", "<ein hund rennt>", ""]]
    assert out[0][0][0] == "<EIN MANN FÄHRT FAHRRAD.> Zwei Hunde." and out[1][0][0] == "<USA>" and out[4][0][0] == "42"
    given.clear()
    [[(loud, _)]] = by_sentence(["EIN HUND."], "de", lambda s, _: given.append(s) or [[("a dog.", -1.0)]], str.title)
    assert given == [["Ein Hund."]] and loud == "A DOG."


def test_numbers_go_to_the_model_as_stand_ins_and_come_back_as_written():
    """Each sentence's longer numbers are 2, 3, ... for the model (a digit the sentence holds alone
    is none of them), sentence by sentence, and every hypothesis gets them back, also in capitals;
    a digit the model adds is left as it is."""
    given: list[list[str]] = []

    def model(sentences, _):
        given.append(sentences)
        return [[(s.replace("Hunde", "dogs") + " 7", -1.0), (s, -2.0)] for s in sentences]

    [out] = by_sentence(["Sie sahen 12 Hunde und 1999 Hunde. DANN KAMEN 3 HUNDE UND 12 HUNDE!"], "de", model, str.lower)
    assert given == [["Sie sahen 2 Hunde und 3 Hunde.", "dann kamen 3 hunde und 2 hunde!"]]  # 3: one digit, as typed
    assert out[0][0] == "Sie sahen 12 dogs und 1999 dogs. 7 DANN KAMEN 3 HUNDE UND 12 HUNDE! 7"
    assert out[1][0] == "Sie sahen 12 Hunde und 1999 Hunde. DANN KAMEN 3 HUNDE UND 12 HUNDE!"


def test_progress_counts_lines_not_sentences():
    """Three lines of three sentences, a blank line, a line of one and one whose sentence has no
    piece (no batch holds it), searched in batches of two sentences: the progress told is in
    lines, never past the 5 lines that are not blank, and reaches them once the search is done."""
    lines = ["Eins. Zwei. Drei.", "Vier. Fünf. Sechs.", "", "Sieben. Acht. Neun.", "Zehn.", "\u200b"]
    told: list[int] = []

    def batched(sentences, progress):
        searched = [s for s in sentences if s and s != "\u200b"]
        for start in range(0, len(searched), 2):  # as an engine calls it, a batch at a time
            progress(len(searched[start : start + 2]))
            assert sum(told) <= 5
        return stub(sentences)

    by_sentence(lines, "de", batched, as_typed, told.append)
    assert sum(told) == 5 and all(n > 0 for n in told)
