"""LangGraph with clawmemory as its store: a graph that remembers per user and answers from
what it remembered (no model needed to run it).

    pip install "clawmemory[langgraph]"
    python examples/langgraph_store.py alice "Drinks oolong tea" "what tea?"

Memories live in ``CLAWMEM_DB`` (default: ./agent-memory.db), under the clawmemory namespace
``users.<user>`` (LangGraph's ``("users", "<user>")``):

    clawmem --db agent-memory.db -n users.alice list
"""

from __future__ import annotations

import os
import sys
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore

from clawmemory import Memory
from clawmemory.adapters.langgraph import ClawMemoryStore


class State(TypedDict):
    user: str
    fact: str
    question: str
    answer: str


def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
    if state["fact"]:
        key = state["fact"].lower().replace(" ", "-")[:40]
        store.put(("users", state["user"]), key, {"content": state["fact"]})
    return {}


def answer(state: State, *, store: BaseStore) -> dict[str, Any]:
    hits = store.search(("users", state["user"]), query=state["question"], limit=1)
    return {"answer": hits[0].value["content"] if hits else "I don't know yet."}


def main(user: str, fact: str, question: str) -> None:
    graph = StateGraph(State)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    graph.add_edge("answer", END)
    with Memory.open(os.environ.get("CLAWMEM_DB", "agent-memory.db")) as mem:
        app = graph.compile(store=ClawMemoryStore(mem))
        out = app.invoke({"user": user, "fact": fact, "question": question, "answer": ""})
        print(out["answer"])


if __name__ == "__main__":
    args = [*sys.argv[1:], "", "", ""]
    main(args[0] or "alice", args[1], args[2] or "what do I drink?")
