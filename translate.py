"""Translate sentences with a trained minitrans checkpoint, or its CTranslate2 export.

    python translate.py -c runs/RUN "Ein Mann fährt Fahrrad." "Zwei Hunde spielen."
    cat input.de | python translate.py -c runs/RUN/checkpoints/best.pt > output.en
    python translate.py -c runs/RUN -i input.de -o output.en --beam-size 10
    python translate.py -c runs/RUN --show-attention --attention figures/ "Ein Hund rennt."
    python translate.py -c exports/RUN --compute-type int8 -i input.de    # CTranslate2 (export.py)

One output line per input line, in input order; an empty line stays empty; a line of several
sentences is translated sentence by sentence, a sentence in one case alone recased, numbers
copied as written, a sentence with nothing to translate (an emoji, an address) given back, a
looping translation searched again without its loop (--whole-lines: each line whole, as typed). Typed at a
terminal (or with --interactive), each line is translated as soon as it is entered. A file or a
pipe is translated a thousand lines at a time with a progress bar on stderr (where stderr is a
terminal); Ctrl-C says how many lines were done, and leaves an -o file as it was.
"""

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from itertools import islice
from pathlib import Path
from typing import TextIO

from tqdm import tqdm

from inference import ct2_translator
from inference.api import ENGINES, load_translator
from inference.contract import Progress, Translating
from inference.translator import BATCH_SIZE, Translator
from inference.workers import WorkerDied
from utils.cli import OneLineErrorParser, non_negative_float, non_negative_int, positive_int, run_command
from utils.device import pick_device
from utils.errors import Stopped, UserError
from utils.files import atomic_file
from utils.text import utf8_lines

CHUNK = 1000  # lines translated (and written) at a time, so any input size streams through


def head_specs(text: str) -> list[tuple[str, int, int]]:
    """KIND:LAYER:HEAD[,KIND:LAYER:HEAD...] -> [(kind, layer, head), ...]."""
    heads = []
    for part in text.split(","):
        fields = part.strip().split(":")
        if len(fields) != 3 or not (fields[1].isdigit() and fields[2].isdigit()):
            raise argparse.ArgumentTypeError(f"{part!r} is not KIND:LAYER:HEAD, e.g. cross:2:1")
        heads.append((fields[0], int(fields[1]), int(fields[2])))
    return heads


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineErrorParser(
        description="Translate sentences with a trained minitrans checkpoint or its CTranslate2 export. "
        "Sentences come from the arguments, else from -i FILE, else from standard input (one per "
        "line).",
        epilog="A sentence longer than the model's maximum length is truncated, with a warning on "
        "stderr. Exit status: 0 done, 1 a bad checkpoint or input, 2 a bad option.",
    )
    parser.add_argument("sentences", nargs="*", help="sentences to translate")
    parser.add_argument(
        "-c",
        "--checkpoint",
        required=True,
        help="checkpoint file, a run folder (uses its checkpoints/best.pt), or a CTranslate2 export (python export.py)",
    )
    parser.add_argument(
        "--engine",
        choices=ENGINES,
        default="auto",
        help="minitrans: this project's PyTorch decoder, on a checkpoint; ctranslate2: "
        "CTranslate2, on an export; auto (default): by what -c is",
    )
    parser.add_argument("-i", "--input", type=Path, help="read sentences from this file (UTF-8, one per line)")
    parser.add_argument("-o", "--output", type=Path, help="write translations to this file instead of stdout")
    parser.add_argument(
        "--whole-lines",
        action="store_true",
        help="give the model each line whole and as typed, as it was trained; by default a line of "
        "several sentences is translated sentence by sentence and joined back with its own spacing, "
        "a sentence in one case alone is recased (for a model that reads its source as it is), "
        "numbers are copied as written, a sentence with nothing "
        "to translate is given back, and a translation "
        "that loops is searched again without the loop (always whole with --attention and "
        "--show-attention, whose figures are of the line)",
    )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="translate each input line as soon as it is read (the default when standard "
        "input is a terminal; piped input is translated in chunks of 1000 lines)",
    )
    search = parser.add_argument_group("search")
    search.add_argument("-b", "--beam-size", type=positive_int, default=5, help="beam size (default 5)")
    search.add_argument("--greedy", action="store_true", help="greedy search (the same as --beam-size 1)")
    search.add_argument(
        "--length-penalty",
        type=non_negative_float,
        help="alpha in log_prob / length**alpha: 0 favours short outputs, 1 (default) "
        "ranks by log-probability per token; beam search only",
    )
    search.add_argument(
        "--max-len-ratio",
        type=non_negative_float,
        default=1.5,
        help="outputs end after ratio * source pieces + --max-len-extra (default 1.5)",
    )
    search.add_argument("--max-len-extra", type=non_negative_int, default=10, help="see --max-len-ratio (default 10)")
    search.add_argument(
        "-n",
        "--n-best",
        type=positive_int,
        default=1,
        help="print the N best translations of each sentence as 'LINE<TAB>SCORE<TAB>TEXT' "
        "(N <= beam size; LINE counts from 1)",
    )
    run = parser.add_argument_group("machine")
    run.add_argument(
        "--batch-size",
        type=positive_int,
        help=f"most sentences decoded together (default: the engine's own, {BATCH_SIZE} for minitrans, "
        f"{ct2_translator.BATCH_SIZE} for ctranslate2)",
    )
    run.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:N")
    run.add_argument(
        "--threads", type=positive_int, help="CPU cores to use (default: all this process may use; more are refused)"
    )
    run.add_argument(
        "--compute-type",
        default="default",
        help="int8: int8 weights, faster on CPU (either engine, quantized as the model loads); "
        "bfloat16: the matmuls in bf16 (our engine, where the CPU or GPU has native bf16); "
        "float32; with the ctranslate2 engine any CTranslate2 compute type; default: the "
        "weights as saved",
    )
    show = parser.add_argument_group("attention")
    show.add_argument(
        "--attention",
        type=Path,
        metavar="DIR",
        help="write the attention figures of each sentence (encoder self, decoder self, "
        "cross; every layer, a panel per head) as PNG files into DIR",
    )
    show.add_argument(
        "--mask-heads",
        type=head_specs,
        default=[],
        metavar="KIND:LAYER:HEAD[,...]",
        help="translate with these attention heads silenced (their weights times 0), to see "
        "what a head does; KIND is encoder_self, decoder_self or cross, layers and heads "
        "count from 1 as in the attention figures",
    )
    show.add_argument(
        "--show-attention",
        action="store_true",
        help="print the last layer's cross-attention (mean of heads) of each sentence as a heatmap on stderr",
    )
    return parser


def run(args: argparse.Namespace) -> None:
    if args.sentences and args.input:
        raise UserError("give sentences as arguments or with -i FILE, not both")
    if (
        args.input
        and args.output
        and args.output.exists()
        and args.input.exists()
        and os.path.samefile(args.input, args.output)
    ):
        raise UserError(
            f"-i {args.input} and -o {args.output} are the same file: the translations would "
            "replace the sentences; write them to another file"
        )
    if args.attention is not None:  # made before translating: a bad folder fails at once, not after the work
        try:
            args.attention.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UserError(
                f"--attention {args.attention}: cannot make the folder for the figures "
                f"({e.strerror or e}{'; it is a file' if args.attention.is_file() else ''})"
            ) from None
    beam_size = 1 if args.greedy else args.beam_size
    if args.n_best > beam_size:
        raise UserError(f"--n-best {args.n_best} is larger than the beam size {beam_size}")
    given = {"length_penalty": args.length_penalty} if args.length_penalty is not None else {}
    translator = load_translator(
        args.checkpoint,
        args.engine,
        pick_device(args.device, "--device"),
        compute_type=args.compute_type,
        threads=args.threads or 0,
        beam_size=beam_size,
        max_len_ratio=args.max_len_ratio,
        max_len_extra=args.max_len_extra,
        batch_size=args.batch_size,
        whole_lines=bool(args.whole_lines or args.attention or args.show_attention),
        **given,
    )
    if not isinstance(translator, Translator):
        if args.attention or args.show_attention or args.mask_heads:
            raise UserError(
                "--attention, --show-attention and --mask-heads need the minitrans engine and a "
                "checkpoint: CTranslate2 does not give every layer's attention"
            )
    else:
        try:
            translator.model.mask_heads(args.mask_heads)
        except ValueError as e:
            raise UserError(f"--mask-heads: {e}") from None

    if args.sentences:
        lines: Iterator[str] = iter(args.sentences)
    elif args.input:
        try:
            stream = open(args.input, "rb")
        except OSError as e:
            raise UserError(f"cannot read {args.input}: {e.strerror}") from None
        lines = utf8_lines(stream, str(args.input))
    else:
        lines = utf8_lines(sys.stdin.buffer, "standard input")
    # one line at a time for a person typing: a chunk would wait for 1000 lines or Ctrl-D
    interactive = args.interactive or (not args.sentences and not args.input and sys.stdin.isatty())
    if interactive and sys.stdin.isatty():
        print("Type a sentence and press Enter; Ctrl-D ends.", file=sys.stderr)

    # lines in all, where they can be counted before translating: a pipe's total is unknown
    total = len(args.sentences) if args.sentences else count_lines(args.input) if args.input else None
    bar = tqdm(
        total=total, unit=" lines", dynamic_ncols=True, disable=interactive or not sys.stderr.isatty(), leave=False
    )
    done = 0
    of = f"{total:,}" if total else "the"
    try:
        with output_file(args.output) as out:
            while chunk := list(islice(lines, 1 if interactive else CHUNK)):
                translate_chunk(translator, chunk, done + 1, args, out, bar.update)  # the bar moves by batch
                done += len(chunk)
                bar.update(done - bar.n)  # and the chunk's blank lines, which no batch holds
    except KeyboardInterrupt:
        raise Interrupted(f"Ctrl-C after {done:,} of {of} lines; {kept(args.output)}") from None
    except WorkerDied as e:
        raise UserError(f"{e} after {done:,} of {of} lines; {kept(args.output)}") from None
    finally:
        bar.close()
        translator.close()  # its worker processes end here, whatever ended the loop


def kept(output: Path | None) -> str:
    """What an interrupted translation left of its output (output_file writes a file whole or not at all)."""
    if output is None or (output.exists() and not output.is_file()):
        return "the translations of those were written"
    return f"{output} is as it was" if output.exists() else f"{output} was not written"


class Interrupted(Stopped):
    """Ctrl-C while translating: how far it got (exit status 130)."""


def count_lines(path: Path) -> int | None:
    """The lines of a file (the last one need not end in a newline); None where it cannot be read
    (the error is said when it is read) or is not a regular file (a pipe read twice loses lines)."""
    if not path.is_file():
        return None
    try:
        with open(path, "rb") as file:
            count, last = 0, b"\n"
            while block := file.read(1 << 20):
                count, last = count + block.count(b"\n"), block[-1:]
            return count + (last != b"\n")
    except OSError:
        return None


@contextmanager
def output_file(path: Path | None) -> Iterator[TextIO]:
    """Standard output, or `path` written atomically: the translations replace it only once
    all are written, so a failed or interrupted run leaves the file that was there. A path
    that is not a regular file (a pipe, /dev/stdout) is written as it goes."""
    if path is None:
        yield sys.stdout
        return
    if path.is_dir():
        raise UserError(f"cannot write {path}: Is a directory")
    with ExitStack() as stack:
        try:
            out = stack.enter_context(
                open(path, "w", encoding="utf-8")
                if path.exists() and not path.is_file()
                else atomic_file(path, "w", encoding="utf-8")
            )
        except OSError as e:
            raise UserError(f"cannot write {path}: {e.strerror}") from None
        yield out


def translate_chunk(
    translator: Translating, chunk: list[str], first: int, args: argparse.Namespace, out: TextIO, progress: Progress
) -> None:
    """Translate and write one chunk of lines; `first` is the number of its first line."""
    nbest = translator.translate_nbest(chunk, args.n_best, progress)
    for number, hypotheses in enumerate(nbest, start=first):
        if args.n_best == 1:
            out.write((hypotheses[0][0] if hypotheses else "") + "\n")
        else:
            for text, score in hypotheses or [("", 0.0)]:
                out.write(f"{number}\t{score:.4f}\t{text}\n")
    out.flush()
    if translator.truncated:
        print(
            f"warning: {translator.truncated} sentence(s) longer than the model's "
            f"{translator.max_len} pieces were truncated",
            file=sys.stderr,
        )
    if args.attention or args.show_attention:
        from viz.attention import save_pngs, terminal_heatmap  # matplotlib: start-up time plain translation skips

        # the hypotheses just searched: the maps are of the translations written, found once
        for i, att in enumerate(translator.attention(chunk, translator.last_hypotheses)):
            if att is None:  # a blank line, or one SentencePiece normalises away, has no attention
                continue
            if args.attention:
                save_pngs(att, args.attention, f"sentence{first + i}")
            if args.show_attention:
                print(terminal_heatmap(att), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(lambda: run(args))


if __name__ == "__main__":
    sys.exit(main())
