#!/usr/bin/env python3
"""Writes models.json, revolve's table of known models, from litellm's.

    pip download litellm --no-deps -d /tmp/litellm
    unzip -o /tmp/litellm/litellm-*.whl 'litellm/model_prices_and_context_window*' -d /tmp/litellm
    python3 core/models/update.py /tmp/litellm/litellm/model_prices_and_context_window_backup.json 1.110.2 2026-12-05

Keeps the models people use with revolve's providers (KEEP below), each
under the name a request gives it: OpenAI's and Anthropic's as their APIs
name them, Ollama's as `ollama/NAME`, and other open models without their
provider prefix (OpenRouter's `vendor/NAME` is looked up as NAME). Prices
are US dollars per million tokens; `window` is litellm's max_input_tokens,
`max_output` its max_output_tokens, `vision` its supports_vision.
"""

import json
import sys

# (litellm key, name in revolve's table)
KEEP = [
    # OpenAI
    *[(k, k) for k in [
        "gpt-5.6", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna",
        "gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano",
        "gpt-5.2", "gpt-5.1", "gpt-5", "gpt-5-mini", "gpt-5-nano",
        "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini",
        "o3", "o3-mini", "o4-mini",
    ]],
    # Anthropic
    *[(k, k) for k in [
        "claude-fable-5-1", "claude-fable-5", "claude-mythos-5-1", "claude-mythos-5",
        "claude-opus-5-5", "claude-opus-5", "claude-opus-4-8", "claude-opus-4-7",
        "claude-opus-4-6", "claude-opus-4-5", "claude-sonnet-5-5", "claude-sonnet-5",
        "claude-sonnet-4-6", "claude-sonnet-4-5", "claude-haiku-5-5", "claude-haiku-4-5",
    ]],
    # Ollama
    *[("ollama/" + k, "ollama/" + k) for k in [
        "llama3.1", "llama3", "mistral-7B-Instruct-v0.2", "codegeex4",
        "deepseek-coder-v2-instruct", "gpt-oss:20b-cloud", "gpt-oss:120b-cloud",
        "qwen3-coder:480b-cloud", "deepseek-v3.1:671b-cloud",
    ]],
    # Open and other models, as OpenRouter and their own APIs serve them
    ("deepseek-v4-pro", "deepseek-v4-pro"),
    ("deepseek-v4-flash", "deepseek-v4-flash"),
    ("deepseek/deepseek-v3.2", "deepseek-v3.2"),
    ("deepseek-chat", "deepseek-chat"),
    ("deepseek-reasoner", "deepseek-reasoner"),
    ("moonshot/kimi-k3", "kimi-k3"),
    ("moonshot/kimi-k2.6", "kimi-k2.6"),
    ("zai/glm-5.1", "glm-5.1"),
    ("zai/glm-4.6", "glm-4.6"),
    ("mistral/devstral-latest", "devstral-latest"),
    ("mistral/codestral-latest", "codestral-latest"),
    ("gemini/gemini-3.1-pro-preview", "gemini-3.1-pro-preview"),
    ("gemini/gemini-3.5-flash", "gemini-3.5-flash"),
    ("gemini/gemini-2.5-pro", "gemini-2.5-pro"),
    ("gemini/gemini-2.5-flash", "gemini-2.5-flash"),
    ("gemini/gemini-2.5-flash-lite", "gemini-2.5-flash-lite"),
    ("gemini/gemini-3-flash-preview", "gemini-3-flash-preview"),
    ("xai/grok-4.5", "grok-4.5"),
    ("xai/grok-code-fast-1", "grok-code-fast-1"),
]


# OpenAI's families whose models the Responses API serves first.
RESPONSES_FIRST = ("gpt-5", "o1", "o3", "o4", "codex-")


def per_million(cost):
    """A per-token price in dollars as dollars per million tokens."""
    if cost is None:
        return None
    value = round(float(cost) * 1_000_000, 6)
    return int(value) if value == int(value) else value


def main():
    path, version, day = sys.argv[1:4]
    table = json.load(open(path))
    models = {}
    for key, name in KEEP:
        m = table[key]
        entry = {
            "window": m.get("max_input_tokens"),
            "max_output": m.get("max_output_tokens"),
            "input": per_million(m.get("input_cost_per_token")),
            "cached_input": per_million(m.get("cache_read_input_token_cost")),
            "cache_write": per_million(m.get("cache_creation_input_token_cost")),
            "output": per_million(m.get("output_cost_per_token")),
            # Whether it reads images (issue 44): said only when litellm says.
            "vision": m.get("supports_vision"),
            # Served first on OpenAI's Responses API (issue 45): the
            # reasoning families, which the `openai` preset then speaks it to.
            "responses": True if name.startswith(RESPONSES_FIRST) else None,
        }
        models[name] = {k: v for k, v in entry.items() if v is not None}
    out = {
        "source": f"litellm {version} (PyPI), litellm/model_prices_and_context_window_backup.json, "
        f"read {day} by core/models/update.py; prices in US dollars per million tokens",
        "models": models,
    }
    # One model a line, so a diff of two updates reads model by model.
    lines = [f'{json.dumps(n)}: {json.dumps(e, separators=(",", ":"))}' for n, e in models.items()]
    text = '{\n "source": ' + json.dumps(out["source"]) + ',\n "models": {\n  '
    text += ",\n  ".join(lines) + "\n }\n}\n"
    assert json.loads(text) == out
    with open(__file__.rsplit("/", 1)[0] + "/models.json", "w") as f:
        f.write(text)
    print(f"{len(models)} models")


main()
