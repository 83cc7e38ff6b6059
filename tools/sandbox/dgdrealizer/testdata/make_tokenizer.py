"""Writes tiny-llama/: a small (2,048 words) word-level tokenizer with a chat template and a config.json
shaped like Llama-3.1-8B (layers, heads, hidden size), so that the Dynamo mocker computes that
model's KV bytes per token and the frontend can tokenize chat requests. Nothing is downloaded.

Run with the upstream venv: bin/upstream/bin/python tools/sandbox/dgdrealizer/testdata/make_tokenizer.py
"""

import json
import pathlib
import string

from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast

OUT = pathlib.Path(__file__).resolve().parent / "tiny-llama"

SPECIAL = ["<unk>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
# Lower-case letters, digits and punctuation alone and a few hundred common English words:
# every prompt tokenizes to known ids, and the mocker's generated ids decode to words.
WORDS = """the of and to a in is it you that he was for on are with as I his they be at one
have this from or had by hot word but what some we can out other were all there when up use
your how said an each she which do their time if will way about many then them write would
like so these her long make thing see him two has look more day could go come did number
sound no most people my over know water than call first who may down side been now find any
new work part take get place made live where after back little only round man year came show
every good me give our under name very through just form sentence great think say help low
line differ turn cause much mean before move right boy old too same tell does set three want
air well also play small end put home read hand port large spell add even land here must big
high such follow act why ask men change went light kind off need house picture try us again
animal point mother world near build self earth father head stand own page should country
found answer school grow study still learn plant cover food sun four between state keep eye
never last let thought city tree cross farm hard start might story saw far sea draw left late
run while press close night real life few north open seem together next white children begin
got walk example ease paper group always music those both mark often letter until mile river
car feet care second book carry took science eat room friend began idea fish mountain stop
once base hear horse cut sure watch color face wood main enough plain girl usual young ready
above ever red list though feel talk bird soon body dog family direct pose leave song measure
door product black short numeral class wind question happen complete ship area half rock
order fire south problem piece told knew pass since top whole king space heard best hour
better true during hundred five remember step early hold west ground interest reach fast verb
sing listen six table travel less morning ten simple several vowel toward war lay against
pattern slow center love person money serve appear road map rain rule govern pull cold notice
voice unit power town fine certain fly fall lead cry dark machine note wait plan figure star
box noun field rest correct able pound done beauty drive stood contain front teach week final
gave green oh quick develop ocean warm free minute strong special mind behind clear tail
produce fact street inch multiply nothing course stay wheel full force blue object decide
surface deep moon island foot system busy test record boat common gold possible plane stead
dry wonder laugh thousand ago ran check game shape equate miss brought heat snow tire bring
yes distant fill east paint language among hello assistant user model token tokens request
response stream chat completion deploy cluster gpu""".split()


# The mocker answers with token ids drawn from [1000, 2000): the vocabulary is filled up to
# VOCAB_SIZE with made-up syllable words so that every generated id decodes to a word.
VOCAB_SIZE = 2048
CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"


def syllable_words():
    for a in CONSONANTS:
        for b in VOWELS:
            for c in CONSONANTS:
                for d in VOWELS:
                    yield a + b + c + d


def main() -> None:
    vocab: dict[str, int] = {}
    for t in SPECIAL + list(string.ascii_lowercase + string.ascii_uppercase + string.digits + string.punctuation) + WORDS:
        vocab.setdefault(t, len(vocab))
    for w in syllable_words():
        if len(vocab) == VOCAB_SIZE:
            break
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tok.decoder = decoders.WordPiece(prefix="##")  # joins tokens with spaces
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
        model_max_length=8192,
        additional_special_tokens=SPECIAL[3:],
    )
    fast.chat_template = (
        "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}"
    )
    OUT.mkdir(exist_ok=True)
    fast.save_pretrained(OUT)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "vocab_size": len(vocab),
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "max_position_embeddings": 8192,
        "torch_dtype": "bfloat16",
        "bos_token_id": vocab["<s>"],
        "eos_token_id": vocab["</s>"],
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": False,
    }
    (OUT / "config.json").write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    (OUT / "generation_config.json").write_text(
        json.dumps({"bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"]}, indent=2) + "\n"
    )


if __name__ == "__main__":
    main()
