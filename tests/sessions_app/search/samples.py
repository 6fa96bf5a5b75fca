"""Small sources in each language the chunker knows, with the definitions each holds."""

from __future__ import annotations

SOURCES: dict[str, tuple[str, set[str]]] = {
    "app/retry.py": (
        '"""Retries."""\n\nimport time\n\n\n@decorated\ndef retry_call(fn, attempts=3):\n'
        "    for n in range(attempts):\n        try:\n            return fn()\n"
        "        except OSError:\n            time.sleep(2**n)\n\n\nclass Backoff:\n"
        "    def delay(self, n):\n        return 2**n\n",
        {"retry_call", "Backoff", "delay"},
    ),
    "web/cart.js": (
        "function addItem(cart, item) {\n  cart.push(item);\n}\n\n"
        "const removeItem = (cart, item) => cart.filter((x) => x !== item);\n\n"
        "class Cart {\n  total() {\n    return 0;\n  }\n}\n",
        {"addItem", "removeItem", "Cart", "total"},
    ),
    "web/user.ts": (
        "interface User {\n  name: string;\n}\n\nexport function greet(user: User): string {\n"
        "  return `hi ${user.name}`;\n}\n\ntype Id = string;\n",
        {"User", "greet", "Id"},
    ),
    "web/view.tsx": (
        "export function Banner(props: { title: string }) {\n  return <h1>{props.title}</h1>;\n}\n",
        {"Banner"},
    ),
    "cmd/server.go": (
        "package main\n\ntype Server struct {\n\tport int\n}\n\n"
        "func (s *Server) Listen() error {\n\treturn nil\n}\n\nfunc main() {\n\ts := Server{}\n"
        "\ts.Listen()\n}\n",
        {"Server", "Listen", "main"},
    ),
    "src/Invoice.java": (
        "public class Invoice {\n  private int total;\n  public Invoice(int total) {\n"
        "    this.total = total;\n  }\n  public int computeTax() {\n    return total / 5;\n  }\n}\n",
        {"Invoice", "computeTax"},
    ),
    "src/Ledger.cs": (
        "namespace Books {\n  public class Ledger {\n    public int Balance { get; set; }\n"
        "    public void Post(int amount) {\n      Balance += amount;\n    }\n  }\n}\n",
        {"Ledger", "Balance", "Post"},
    ),
    "src/queue.rs": (
        "pub struct Queue {\n    items: Vec<u32>,\n}\n\nimpl Queue {\n"
        "    pub fn push_back(&mut self, item: u32) {\n        self.items.push(item);\n    }\n}\n\n"
        "pub trait Drain {\n    fn drain_all(&mut self);\n}\n",
        {"Queue", "push_back", "Drain", "drain_all"},
    ),
}

MARKDOWN = (
    "# Guide\n\nIntro.\n\n## Install\n\nRun make install.\n\n## Configure\n\nSet ACODE_URL.\n"
)
