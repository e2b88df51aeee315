"""The sandbox's gateway and member keys at the HTTP level: account-level endpoints are the
owner's, a ``read`` member may read a catalog product but not send, a member's request body
reaches the handler unchanged, and members' keys never appear in answers."""

from __future__ import annotations

from typing import Any

MEMBERS = "/api/v1/account/members"


def add(box: Any, permission: str, sessions: list[str], email: str) -> tuple[dict, str]:
    answer = box.api("POST", MEMBERS, json={"name": "M", "email": email,
                                            "permission": permission, "sessions": sessions})
    assert answer.status_code == 200, answer.text
    member = answer.json()["data"]
    assert set(member) == {"user_id", "name", "email", "permission", "sessions"}
    key = box.http.post(f"/sandbox/members/{member['user_id']}/key").json()["apiKey"]
    assert key not in answer.text and key != box.api_key
    return member, key


def as_member(box: Any, key: str, method: str, path: str, **kw: Any) -> Any:
    return box.http.request(method, path, headers={"Authorization": key}, **kw)


def test_account_level_endpoints_are_the_owners(make_sandbox) -> None:
    box = make_sandbox()
    box.create_session("s1")
    _, key = add(box, "write", ["s1"], "w@example.com")
    sms = as_member(box, key, "POST", "/api/v1/sms/send", json={"to": "5511988887777",
                                                                 "text": "oi"})
    assert sms.status_code == 403 and sms.json()["statusCode"] == 403
    hooks = as_member(box, key, "PUT", "/api/v1/account/webhooks/sms",
                      json={"url": "http://127.0.0.1:9/h"})
    assert hooks.status_code == 403
    members = as_member(box, key, "GET", MEMBERS)
    assert members.status_code == 403 and "owner" in members.json()["error"]
    assert box.api("POST", "/api/v1/sms/send",
                   json={"to": "5511988887777", "text": "oi"}).status_code == 200


def test_a_read_member_reads_a_catalog_product_but_does_not_send(make_sandbox) -> None:
    box = make_sandbox()
    box.create_session("s1")
    _, key = add(box, "read", ["s1"], "r@example.com")
    body = {"sessionId": "s1", "product_id": "p-1", "business_jid": "5511999990000@s.whatsapp.net",
            "async": False}
    product = as_member(box, key, "POST", "/api/v1/catalog/product/get", json=body)
    assert product.status_code == 200, product.text
    sent = as_member(box, key, "POST", "/api/v1/messages/send/text",
                     json={"sessionId": "s1", "to": "5511988887777", "text": "oi"})
    assert sent.status_code == 403 and "read permission" in sent.json()["error"]
    assert box.sends() == []


def test_a_write_members_body_reaches_the_handler_unchanged(make_sandbox) -> None:
    box = make_sandbox()
    box.create_session("s1")
    _, key = add(box, "write", ["s1"], "w@example.com")
    text = "Olá, ção — " + "x" * 70_000  # several ASGI body chunks
    sent = as_member(box, key, "POST", "/api/v1/messages/send/text",
                     json={"sessionId": "s1", "to": "5511988887777", "text": text})
    assert sent.status_code == 200, sent.text
    assert [s["body"]["text"] for s in box.sends()] == [text]
    broken = box.http.post("/api/v1/messages/send/text", content=b"{not json",
                           headers={"Authorization": key, "Content-Type": "application/json"})
    assert broken.status_code == 400
    form = {"sessionId": "s1", "to": "5511988887777", "text": "form"}
    assert as_member(box, key, "POST", "/api/v1/messages/send/text",
                     data=form).status_code == 200
    multipart = {name: (None, value) for name, value in form.items()}
    assert as_member(box, key, "POST", "/api/v1/messages/send/text",
                     files=multipart).status_code == 200
    other = {**form, "sessionId": "s2"}
    assert as_member(box, key, "POST", "/api/v1/messages/send/text",
                     data=other).status_code == 404
    assert as_member(box, key, "POST", "/api/v1/messages/send/text",
                     files={**multipart, "sessionId": (None, "s2")}).status_code == 404
    assert [s["body"]["text"] for s in box.sends()][1:] == ["form", "form"]
