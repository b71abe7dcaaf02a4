"""Tool calls on the text engines (the llama.cpp ones), in the Hermes form most tool-calling chat templates use:
`<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>` (read back by chat_wire.parse_tool_calls).

- `CHATML_TOOLS`: a ChatML chat template that renders the tools, the assistant's tool calls and the tool results
  (Qwen2.5's, which Hermes and SmolLM3 follow), for a ChatML model whose own template renders none of them
  (SmolLM2): `Gateway(url, chat_template=with_tools(template_of(gguf)))`.
- `tool_grammar`: when a request forces a tool call (`tool_choice` "required" or a named function), the GBNF grammar
  the engine generates under, so the reply is a tool call whatever the model would have said. The JSON is the
  canonical form the template renders the call back with (`tojson`: `", "` and `": "`, keys in the schema's
  order, integers for numbers, no needless escapes), so the next turn's prompt extends this turn's ids.
"""

from __future__ import annotations

import json
from typing import Any

CHATML_TOOLS = """{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- "# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": <function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) or (message.role == 'assistant' and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>' + message.role }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{%- if loop.index0 == 0 or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""  # noqa: E501 - the template's own lines


def with_tools(template: tuple[str, str, str]) -> tuple[str, str, str]:
    """A GGUF's (template, BOS, EOS) with CHATML_TOOLS as the template: for a ChatML model that renders no tools."""
    return CHATML_TOOLS, template[1], template[2]


def forced(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The tools a request forces the reply to call one of (`tool_choice` "required" or a named function); []:
    the model is free (`auto`, `none`, no tools)."""
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("function"), dict)]
    choice = body.get("tool_choice")
    if not tools or choice in (None, "auto", "none"):
        return []
    if choice == "required":
        return tools
    name = ((choice or {}).get("function") or {}).get("name") if isinstance(choice, dict) else None
    return [t for t in tools if t["function"].get("name") == name]


# JSON as json.dumps(ensure_ascii=False) writes it (the template's tojson), one rule per kind of value
_JSON = r"""
ws-value ::= object | array | string | integer | "true" | "false" | "null"
object ::= "{" ( string ": " ws-value ( ", " string ": " ws-value )* )? "}"
array ::= "[" ( ws-value ( ", " ws-value )* )? "]"
string ::= "\"" char* "\""
char ::= [^"\\\x00-\x1f] | "\\" ( ["\\bfnrt] | "u00" [01] [0-9a-f] )
integer ::= "-"? ( "0" | [1-9] [0-9]{0,15} )
"""


def _lit(text: str) -> str:
    return json.dumps(text)  # a GBNF literal is a JSON string


def _value(schema: Any, rules: list[str], name: str) -> str:
    """The rule for one value of `schema` (added to `rules` when it needs its own); unknown shapes: any value."""
    if not isinstance(schema, dict):
        return "ws-value"
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "( " + " | ".join(_lit(json.dumps(v, ensure_ascii=False)) for v in schema["enum"]) + " )"
    kind = schema.get("type")
    if kind == "string":
        return "string"
    if kind in ("integer", "number"):
        return "integer"
    if kind == "boolean":
        return '( "true" | "false" )'
    if kind == "array":
        item = _value(schema.get("items"), rules, f"{name}-item")
        return f'"[" ( {item} ( ", " {item} )* )? "]"'
    if kind == "object" or "properties" in schema:
        props = schema.get("properties")
        if not isinstance(props, dict) or not props:
            return "object"
        parts = []
        for i, (key, sub) in enumerate(props.items()):
            sep = "" if i == 0 else '", " '
            parts.append(f"{sep}{_lit(json.dumps(key, ensure_ascii=False) + ': ')} {_value(sub, rules, f'{name}-{i}')}")
        rules.append(f'{name} ::= "{{" {" ".join(parts)} "}}"')
        return name
    return "ws-value"


def tool_grammar(tools: list[dict[str, Any]]) -> str:
    """A GBNF grammar whose every sentence is one Hermes tool call of one of `tools` (chat completions' tool
    objects), its arguments following the tool's JSON schema (every property, in the schema's order)."""
    rules: list[str] = []
    calls = []
    for i, tool in enumerate(tools):
        fn = tool["function"]
        args = _value({"type": "object", **(fn.get("parameters") or {})}, rules, f"args-{i}")
        head = _lit('<tool_call>\n{"name": ' + json.dumps(fn["name"], ensure_ascii=False) + ', "arguments": ')
        calls.append(f"{head} {args} {_lit('}' + chr(10) + '</tool_call>')}")
    root = "root ::= " + " | ".join(f"( {c} )" for c in calls)
    return "\n".join([root, *rules]) + _JSON
