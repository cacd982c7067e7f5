"""The approvers' feed (/ws/approvals/): only approvers may open it, it starts with the queue as it is,
and every change of the queue (a call waits, is decided, its run is stopped) reaches it on commit,
from the one place that publishes (services/approval_feed.py)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser
from django.db import connections

from chatapp.models import Run
from chatapp.routing import websocket_urlpatterns
from chatapp.services import approvals, runs
from chatapp.services.run_lifecycle import move
from tests.admin.test_approvals import waiting_call

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("in_memory_channel_layer")]
APP = URLRouter(websocket_urlpatterns)


async def open_feed(user) -> tuple[WebsocketCommunicator, bool, int | None]:
    communicator = WebsocketCommunicator(APP, "/ws/approvals/")
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    return communicator, connected, code


async def test_non_approvers_and_anonymous_people_are_refused(people):
    # alice: no staff status; stan: staff without approve_toolcall; otto: an auditor.
    for user in (AnonymousUser(), people["alice"], people["stan"], people["otto"]):
        communicator, connected, code = await open_feed(user)
        assert (connected, code) == (False, 4403), user
    communicator, connected, _ = await open_feed(people["april"])
    assert connected
    await communicator.disconnect()
    await sync_to_async(connections.close_all)()


async def test_an_approver_hears_each_change_of_the_queue(people):
    first = await sync_to_async(waiting_call)(people["alice"])
    second = await sync_to_async(waiting_call)(people["alice"], name="demo_tools__delete_files")
    feed, connected, _ = await open_feed(people["april"])
    assert connected
    hello = await feed.receive_json_from(timeout=5)
    assert hello["type"] == "approvals" and hello["change"] == "current" and hello["pending"] == 2
    assert hello["latest"]["id"] == second.pk and hello["latest"]["user"] == "alice"

    # Decided: the last call of its run (the run moves back to the queue: run_lifecycle announces).
    await sync_to_async(approvals.decide)(first.pk, people["ada"], approve=False, reason="no")
    decided = await feed.receive_json_from(timeout=5)
    assert (decided["change"], decided["pending"], decided["latest"]["id"]) == ("decided", 1, second.pk)
    assert await feed.receive_nothing(timeout=0.2)  # one change, one message

    # Voided: Stop while the run waits takes the call out of the queue.
    await sync_to_async(runs.request_cancel)(second.run)
    voided = await feed.receive_json_from(timeout=5)
    assert (voided["change"], voided["pending"], voided["latest"]) == ("voided", 0, None)

    # Requested: a running run pauses for an admin.
    third = await sync_to_async(waiting_call)(people["alice"])
    await sync_to_async(Run.objects.filter(pk=third.run_id).update)(status=Run.Status.RUNNING)
    assert await feed.receive_nothing(timeout=0.2)  # rows written directly announce nothing
    await sync_to_async(move)(third.run_id, Run.Status.AWAITING_APPROVAL)
    requested = await feed.receive_json_from(timeout=5)
    assert (requested["change"], requested["pending"], requested["latest"]["id"]) == ("requested", 1, third.pk)
    await feed.disconnect()
    await sync_to_async(connections.close_all)()


async def test_a_decision_that_leaves_the_run_waiting_is_announced_by_decide(people):
    first = await sync_to_async(waiting_call)(people["alice"])
    second = await sync_to_async(_second_call_in_the_same_run)(first)
    feed, _, _ = await open_feed(people["april"])
    assert (await feed.receive_json_from(timeout=5))["pending"] == 2
    await sync_to_async(approvals.decide)(first.pk, people["ada"], approve=True)
    decided = await feed.receive_json_from(timeout=5)
    assert (decided["change"], decided["pending"], decided["latest"]["id"]) == ("decided", 1, second.pk)
    await feed.disconnect()
    await sync_to_async(connections.close_all)()


def _second_call_in_the_same_run(first):
    from chatapp.models import ToolCall

    call = ToolCall.objects.get(pk=first.pk)  # a copy: ``first`` keeps its own pk
    call.pk = None
    call.index = 1
    call.call_id = "call_2"
    call.save()
    return call


async def test_an_approver_whose_permission_is_taken_away_hears_nothing_more(people):
    feed, connected, _ = await open_feed(people["april"])
    assert connected
    assert (await feed.receive_json_from(timeout=5))["change"] == "current"
    april = people["april"]
    await sync_to_async(april.user_permissions.clear)()
    # The next change of the queue is not sent to her: the feed closes as a new one would be refused.
    await sync_to_async(waiting_call)(people["alice"])
    run_id = (await sync_to_async(Run.objects.latest)("pk")).pk
    await sync_to_async(Run.objects.filter(pk=run_id).update)(status=Run.Status.RUNNING)
    await sync_to_async(move)(run_id, Run.Status.AWAITING_APPROVAL)
    closed = await feed.receive_output(timeout=5)
    assert closed == {"type": "websocket.close", "code": 4403}
    await feed.disconnect()
    await sync_to_async(connections.close_all)()
