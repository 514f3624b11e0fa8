"""German paragraphs as people type them, each with the sentences it holds: what a sentence
splitter is measured on (tests/test_splitting.py), written by hand for the cases captions never
hold: lower case, capitals, a sentence that starts with a number, ordinals, prices, times,
dates, addresses, abbreviations, no final stop."""

PARAGRAPHS: list[tuple[str, list[str]]] = [
    ("Ein Hund rennt. Eine Katze schläft.", ["Ein Hund rennt.", "Eine Katze schläft."]),
    ("ein hund rennt. eine katze schläft.", ["ein hund rennt.", "eine katze schläft."]),
    ("EIN HUND RENNT. EINE KATZE SCHLÄFT.", ["EIN HUND RENNT.", "EINE KATZE SCHLÄFT."]),
    ("Ein Hund rennt. 3 Hunde folgen ihm.", ["Ein Hund rennt.", "3 Hunde folgen ihm."]),
    ("Ein Mann im 2. Stock.", ["Ein Mann im 2. Stock."]),
    ("Sie belegt den 1. Platz. Er wird Zweiter.", ["Sie belegt den 1. Platz.", "Er wird Zweiter."]),
    ("Der Preis ist 3,50 Euro. Das ist billig.", ["Der Preis ist 3,50 Euro.", "Das ist billig."]),
    ("Wir treffen uns um 10:30 Uhr. Bis dann!", ["Wir treffen uns um 10:30 Uhr.", "Bis dann!"]),
    ("Am 28.11.2026 regnet es. Wir bleiben zu Hause.", ["Am 28.11.2026 regnet es.", "Wir bleiben zu Hause."]),
    ("Das Haus kostet 1.000.000 Euro.", ["Das Haus kostet 1.000.000 Euro."]),
    ("Besuchen Sie https://example.com. Danke!", ["Besuchen Sie https://example.com.", "Danke!"]),
    ("Wo ist der Hund? Er ist im Garten.", ["Wo ist der Hund?", "Er ist im Garten."]),
    ("wo ist der hund? er ist im garten!", ["wo ist der hund?", "er ist im garten!"]),
    ("Das kostet z.B. 3 Euro.", ["Das kostet z.B. 3 Euro."]),
    ("Ein Hund rennt", ["Ein Hund rennt"]),
    ("Zwei Männer und 5 Hunde. 1 Kind spielt.", ["Zwei Männer und 5 Hunde.", "1 Kind spielt."]),
    ("Er kam am 3. Mai an. Sie kam später.", ["Er kam am 3. Mai an.", "Sie kam später."]),
    ("Er ist der 1. Er gewann.", ["Er ist der 1.", "Er gewann."]),
    ("sie ist die 2. sie lacht.", ["sie ist die 2.", "sie lacht."]),
    ("er kam am 1. des monats.", ["er kam am 1. des monats."]),
    ("Er ist der 1. Ich-Erzähler des Romans.", ["Er ist der 1. Ich-Erzähler des Romans."]),
    ("ich wohne im 14. stock. und du?", ["ich wohne im 14. stock.", "und du?"]),
    ("Ein Mann fährt Fahrrad. 😀", ["Ein Mann fährt Fahrrad.", "😀"]),
    ("Ein Kind spielt im Sand.   Ein Hund bellt.", ["Ein Kind spielt im Sand.", "Ein Hund bellt."]),
]
# What a sentence ends with that is not an ordinal, an abbreviation that is not one of sentencex's,
# an ellipsis, a capital that is two letters (ﬁ -> FI), in German and English
PARAGRAPHS += [
    ("Er ist 30. Sie ist 25.", ["Er ist 30.", "Sie ist 25."]),
    ("Wir kamen um 5. Dann gingen wir.", ["Wir kamen um 5.", "Dann gingen wir."]),
    ("Er wohnt in der Hauptstr. in Berlin.", ["Er wohnt in der Hauptstr. in Berlin."]),
    ("ich weiß nicht... vielleicht morgen", ["ich weiß nicht... vielleicht morgen"]),
    ("ende. ﬁnden wir es. gut.", ["ende.", "ﬁnden wir es.", "gut."]),
    ("Er wohnt in der Hauptstr. 5 in Berlin.", ["Er wohnt in der Hauptstr. 5 in Berlin."]),
    ("Siehe S. 12 und Abb. 3 hier.", ["Siehe S. 12 und Abb. 3 hier."]),
    ("Tel. 030 1234567 anrufen.", ["Tel. 030 1234567 anrufen."]),
]
ENGLISH_PARAGRAPHS: list[tuple[str, list[str]]] = [
    ("I am 42. You are 7.", ["I am 42.", "You are 7."]),
    ("a dog runs. two cats sleep.", ["a dog runs.", "two cats sleep."]),
]
