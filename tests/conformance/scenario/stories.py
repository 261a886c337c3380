"""The scenarios of the committed corpus: the default story and the named ones.

Their tools keep the default's names and parameters (:data:`TOOL_SHAPES`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .model import PREAMBLE, Call, Retry, Scenario, Spelling, Tool

_ORDER_PARAM = {"type": "string", "description": "Order id, e.g. ORD-1234"}
#: The tools' descriptions and parameters: every agent declares these three.
_TOOL_SHAPES = {
    "lookup_order": (
        "Look up an order by its id: status, items and total.",
        {"type": "object", "properties": {"order_id": _ORDER_PARAM}, "required": ["order_id"]},
    ),
    "track_shipment": (
        "Track the shipment of an order with the carrier.",
        {"type": "object", "properties": {"order_id": _ORDER_PARAM}, "required": ["order_id"]},
    ),
    "open_ticket": (
        "Open a support ticket about an order.",
        {
            "type": "object",
            "properties": {
                "order_id": _ORDER_PARAM,
                "reason": {"type": "string", "description": "Why the ticket is opened"},
            },
            "required": ["order_id", "reason"],
        },
    ),
}


def _tools(returns: dict[str, Any]) -> dict[str, Tool]:
    return {n: Tool(d, p, returns.get(n)) for n, (d, p) in _TOOL_SHAPES.items()}


_TICKET_REASON = "échec du suivi du colis"

#: The story every stack has always run (its cases are ``cases/<stack>/<mode>/``).
DEFAULT = Scenario(
    name="default",
    system_prompt=(
        "You are the support agent of the Ködbüro store. Use the tools to look orders up, "
        "track them and open tickets; answer in the customer's language."
    ),
    questions=(
        "Bonjour ! Où en est ma commande ORD-5521 ? Je l'ai payée 24,98 € et rien n'est arrivé 📦",
        "Hallo! Wo bleibt meine Bestellung ORD-7730? Sie hat 24,98 € gekostet, danke für die Hilfe ☕",
    ),
    tools=_tools(
        {
            "lookup_order": {
                "order_id": "{order_id}",
                "status": "en préparation",
                "items": [{"name": "Câble USB-C 2 m", "qty": 2}],
                "total": "24,98 €",
            },
            "open_ticket": {
                "ticket_id": "T-{digits}",
                "order_id": "{order_id}",
                "status": "ouvert",
            },
        }
    ),
    turns=(
        (
            Call("lookup_order", {"order_id": "{order_id}"}),
            Call("track_shipment", {"order_id": "{order_id}"}),
        ),
        (Call("open_ticket", {"order_id": "{order_id}", "reason": _TICKET_REASON}),),
    ),
    raising="track_shipment",
    error="le transporteur « Colis-Express » ne répond pas (délai dépassé)",
    answer=(
        "Votre commande {order_id} (2 × câble USB-C, 24,98 €) est en préparation. "
        "Le suivi du transporteur est indisponible ; j'ai ouvert le ticket T-{digits}, "
        "vous aurez une réponse sous 24 h. Merci de votre patience 🙏"
    ),
    anthropic_beside=PREAMBLE,
)


def _same_shapes(name: str, **fields: Any) -> Scenario:
    """A scenario on the default's prompt and tools, with ``fields`` of its own."""
    return dataclasses.replace(DEFAULT, name=name, **fields)


#: Named scenarios of the committed corpus (``cases/<stack>/<mode>@<name>/``).
NAMED: dict[str, Scenario] = {
    # Tools return JSON objects (nested, numbers, booleans, null), the model writes the
    # arguments in its own key order without spaces, two parallel calls, one tool raising.
    "json_results": _same_shapes(
        "json_results",
        questions=(
            "Salut ! Ma commande ORD-4410 n'est toujours pas là… Vous pouvez vérifier ? 🙂",
            "Hej! Var är min beställning ORD-6082? Tack på förhand ✨",
        ),
        tools=_tools(
            {
                "lookup_order": {
                    "order": {"id": "{order_id}", "état": "expédiée", "livrable": True},
                    "lignes": [{"sku": 'ÉCRAN-27"', "qté": 1, "prix": 199.9}],
                    "total": {"montant": 199.9, "devise": "EUR"},
                    "note": None,
                },
                "open_ticket": {"ticket": "T-{digits}", "priorité": 2, "tags": ["suivi", "colis"]},
            }
        ),
        turns=(
            (
                Call("track_shipment", {"order_id": "{order_id}"}),
                Call("lookup_order", {"order_id": "{order_id}"}),
            ),
            (
                Call(
                    "open_ticket",
                    {"reason": "suivi indisponible — « Suivi+ » muet", "order_id": "{order_id}"},
                ),
            ),
        ),
        error="Délai dépassé : le service « Suivi+ » n'a pas répondu après 30 s",
        answer=(
            "Commande {order_id} : expédiée (1 écran, 199,90 €). Le suivi ne répond pas ; "
            "ticket T-{digits} ouvert. Bonne journée ☀️"
        ),
    ),
    # One call per turn; a tool returns a list of content blocks, one returns an error
    # result, one raises an error with quotes and a tab; text beside every call; the
    # arguments spelled with spaces, \u escapes and escaped slashes.
    "blocks_and_errors": _same_shapes(
        "blocks_and_errors",
        questions=(
            "Ma commande ORD-3107 (réf. A/B-12) est bloquée ? Merci ! 🙏",
            "Mi pedido ORD-8815 no llega, ¿qué pasa? Gracias 📮",
        ),
        tools=_tools(
            {
                "lookup_order": [
                    {"type": "text", "text": "Commande {order_id} : en transit 🚚"},
                    {"type": "text", "text": "2 colis, dépôt Lyon/Saint-Priest"},
                ],
                "open_ticket": {"error": "ticketing en lecture seule (maintenance)", "code": 503},
            }
        ),
        turns=(
            (Call("lookup_order", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),),
            (Call("track_shipment", {"order_id": "{order_id}"}, Spelling((", ", ": "))),),
            (
                Call(
                    "open_ticket",
                    {"order_id": "{order_id}", "reason": "colis bloqué\n« urgent »\tA/B-12"},
                    Spelling((",", ": "), True, "sorted", escape_slash=True),
                ),
            ),
        ),
        error='HTTP 503 from "carrier/api" — réessayer plus tard\tcode=E42',
        answer=(
            "La commande {order_id} est en transit (2 colis). Le transporteur ne répond pas "
            "et le ticket n'a pas pu être ouvert : réessayez demain 🙇"
        ),
        beside="Je regarde ça tout de suite…",
        anthropic_beside="Je regarde ça tout de suite…",
    ),
    # Tools return plain text, a number and nothing (None); no tool raises; one call,
    # then two in parallel; the arguments spelled as Python's json.dumps does by default.
    "plain_text": _same_shapes(
        "plain_text",
        questions=(
            "Où est passé mon colis ORD-2290 ? Ça fait 3 semaines… 😕",
            "Wo ist Paket ORD-9034? Grüße aus Köln 🌧",
        ),
        tools=_tools(
            {
                "lookup_order": "Commande {order_id} : livrée le 3 mars à 14 h 05 — signée « M. Dupré »",
                "track_shipment": 42,
                "open_ticket": None,
            }
        ),
        turns=(
            (Call("lookup_order", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),),
            (
                Call("track_shipment", {"order_id": "{order_id}"}, Spelling((", ", ": "), True)),
                Call(
                    "open_ticket",
                    {"order_id": "{order_id}", "reason": "colis déclaré livré, non reçu"},
                    Spelling((", ", ": "), True),
                ),
            ),
        ),
        raising=None,
        answer=(
            "Le colis {order_id} est noté livré le 3 mars (signé M. Dupré) ; j'ai signalé "
            "le problème. Désolé pour l'attente 🙏"
        ),
    ),
    # A tool times out (Python's TimeoutError, not an error of its own), and the model server
    # fails two requests first, which the agent's client retries: the first (HTTP 429, rate
    # limited, ``retry-after: 0``) and the answer (HTTP 503, overloaded).
    "retries_and_timeouts": _same_shapes(
        "retries_and_timeouts",
        questions=(
            "Bonsoir ! Ma commande ORD-6614 devait arriver hier, vous savez où elle est ? 🕰️",
            "Hola, ¿dónde está mi pedido ORD-2047? Lo espero desde el lunes ⏳",
        ),
        turns=(
            (
                Call("lookup_order", {"order_id": "{order_id}"}),
                Call("track_shipment", {"order_id": "{order_id}"}),
            ),
            (Call("open_ticket", {"order_id": "{order_id}", "reason": "suivi hors délai (30 s)"}),),
        ),
        raises="TimeoutError",
        error="le suivi « Colis-Express » n'a pas répondu en 30 s (délai dépassé)",
        retries=(Retry(0, 429), Retry(2, 503)),
        answer=(
            "Votre commande {order_id} (2 × câble USB-C, 24,98 €) est en préparation ; le suivi "
            "n'a pas répondu à temps, j'ai ouvert le ticket T-{digits}. Merci ⏳"
        ),
    ),
}
