"""An LCEL chain: ``retriever | format | prompt | model`` with RaMem's retriever.

python examples/lcel_chain.py [--model openai:gpt-4o-mini]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _shared import demo_memory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough

from langchain_ramem import RaMemRetriever
from langchain_ramem.testing import ScriptedChatModel

PROMPT = ChatPromptTemplate.from_messages(
    [
        (
            "system",
            "Answer from the memories below. Check each memory's date and people "
            "before you use it.\n\n{memories}",
        ),
        ("human", "{question}"),
    ]
)


def format_documents(docs: list[Document]) -> str:
    """Documents already carry the situated rendering: join them."""
    return "\n".join(d.page_content for d in docs)


def first_memory(messages: list[BaseMessage]) -> str:
    """The offline model: answer with the first memory's text."""
    lines = messages[0].text.splitlines()
    body = [line for line in lines if line and not line.startswith(("<", "Answer"))]
    return body[0] if body else "I don't know."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model")
    parser.add_argument("--path")
    args = parser.parse_args()
    memory, questions = demo_memory(args.path)
    if args.model:
        from langchain.chat_models import init_chat_model

        model = init_chat_model(args.model)
    else:
        model = ScriptedChatModel(default=first_memory)
    retriever = RaMemRetriever(memory=memory, k=3)
    chain = (
        {"memories": retriever | format_documents, "question": RunnablePassthrough()}
        | PROMPT
        | model
        | StrOutputParser()
    )
    for q in questions[:4]:
        print(f"\nQ: {q['question']}")
        for doc in retriever.invoke(q["question"]):
            m = doc.metadata
            print(
                f"  [{m['rank']}] said {m.get('session_time', '?')} | "
                f"event {m.get('event_time', '-')} | who {m['participants']}"
            )
            print(f"      {m['content']}")
        print(f"A: {chain.invoke(q['question'])}")


if __name__ == "__main__":
    main()
