"""The pieces a streamed reply is made of (chat_wire.py, hermes.py), without an engine: a text engine's reply cut
anywhere streams as content that always adds up to the content read from the whole reply, tool calls after it;
deltas rebuild the message they came from; which requests force a tool call."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from trialbook.rl.chat_wire import HeldText, MessageBuilder, message_deltas, text_message
from trialbook.rl.engines import _render
from trialbook.rl.hermes import CHATML_TOOLS, forced, tool_grammar

CALL = '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -a"}}\n</tool_call>'
REPLIES = ["Let me look.", "  padded text  ", f"Let me look.\n{CALL}", CALL, f"<think>why</think>\n{CALL}", "a < b, so",
           f" {CALL} and after", "<not a call> text"]  # fmt: skip


def _stream(text: str, cuts: list[int], tools: bool) -> tuple[list[dict], dict]:
    held, deltas = HeldText(tools), []
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    for a, b in zip(bounds, bounds[1:], strict=False):
        deltas += held.add(text[a:b])
        assert all(d.get("content") for d in deltas)
    message = text_message(held.text, tools)
    return deltas + held.finish(message), message


@given(st.sampled_from(REPLIES), st.lists(st.integers(0, 200), max_size=6), st.booleans())
def test_streamed_content_adds_up_to_the_whole_replys(text: str, cuts: list[int], tools: bool) -> None:
    deltas, message = _stream(text, cuts, tools)
    built = MessageBuilder()
    for d in deltas:
        built.add(d)
    got = built.message()
    assert (got["content"] or "") == (message["content"] or "")
    assert got.get("tool_calls", []) == message.get("tool_calls", [])
    assert got.get("reasoning_content") == message.get("reasoning_content")


def test_text_before_a_possible_call_goes_out_at_once_the_call_when_whole() -> None:
    held = HeldText(True)
    assert held.add("Let me") == [{"content": "Let me"}]
    assert held.add(" look.\n<tool") == [{"content": " look."}]  # the newline may precede a call: held
    assert held.add('_call>\n{"name": "bash", "arguments": {}}\n</tool_call>') == []
    rest = held.finish(text_message(held.text, True))
    assert [list(d) for d in rest] == [["tool_calls"], ["tool_calls"]]  # nothing more of the content
    assert HeldText(True, hold_all=True).add("Let me") == []  # a forced call: all of it at the end


def test_deltas_rebuild_the_message() -> None:
    calls = [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}
             for i, (name, args) in enumerate((("bash", "{}"), ("ls", '{"a": 1}')))]  # fmt: skip
    message = {"role": "assistant", "content": "Looking.", "reasoning_content": "first", "tool_calls": calls}
    built = MessageBuilder()
    for d in message_deltas(message):
        built.add(d)
    assert built.message() == message


def test_which_requests_force_a_tool_call() -> None:
    tools = [{"type": "function", "function": {"name": n, "parameters": {}}} for n in ("bash", "edit")]
    assert forced({"tools": tools, "tool_choice": "required"}) == tools
    assert forced({"tools": tools, "tool_choice": {"type": "function", "function": {"name": "edit"}}}) == tools[1:]
    assert [forced({"tools": tools, "tool_choice": c}) for c in (None, "auto", "none")] == [[], [], []]
    assert forced({"tool_choice": "required"}) == []


def test_the_grammar_and_the_template_write_a_call_alike() -> None:
    """The template renders a call back in the grammar's form: the same literal head and tail, JSON as tojson."""
    schema = {"type": "object", "properties": {"command": {"type": "string"}, "n": {"type": "integer"},
                                               "ok": {"type": "boolean"}, "mode": {"enum": ["a", "b"]}}}  # fmt: skip
    grammar = tool_grammar([{"type": "function", "function": {"name": "bash", "parameters": schema}}])
    assert grammar.startswith('root ::= ( "<tool_call>\\n{\\"name\\": \\"bash\\", \\"arguments\\": " args-0')
    assert (
        'args-0 ::= "{" "\\"command\\": " string ", " "\\"n\\": " integer ", " "\\"ok\\": " ( "true" | "false" )'
        in grammar
    )
    args = {"command": "ls -a", "n": 3, "ok": True, "mode": "b"}
    call = {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "bash", "arguments": args}}]}
    prompt = _render(CHATML_TOOLS, [{"role": "user", "content": "hi"}, call, {"role": "user", "content": "x"}], "", "")
    rendered = f'<tool_call>\n{{"name": "bash", "arguments": {json.dumps(args)}}}\n</tool_call>'
    assert f"<|im_start|>assistant\n{rendered}<|im_end|>" in prompt
