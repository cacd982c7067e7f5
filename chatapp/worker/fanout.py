"""Publishing many frames to many conversations in one Redis round trip.

The websockets listen on the frame bus (``chatapp/frame_bus.py``): one ``PUBLISH`` per frame. The
channel-layer group of a conversation still has members when something outside the browser follows
it (the REST API's SSE stream, ``manage.py chat``): those get the message through the group, with
the same Lua script and the same capacity and expiry rules as channels_redis's ``group_send``
(channels_redis 4.x, ``RedisChannelLayer``, four round trips per frame), in a second pipeline only
when a group has members. So a tick of a worker relaying a hundred streams is one pipeline that
publishes every frame and lists every group involved. Any other layer gets one ``group_send`` per
frame.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from typing import Any

from chatapp import frame_bus

# channels_redis.core.RedisChannelLayer.group_send's script, unchanged.
GROUP_SEND_LUA = """
    local over_capacity = 0
    local current_time = ARGV[#ARGV - 1]
    local expiry = ARGV[#ARGV]
    for i=1,#KEYS do
        if redis.call('ZCOUNT', KEYS[i], '-inf', '+inf') < tonumber(ARGV[i + #KEYS]) then
            redis.call('ZADD', KEYS[i], current_time, ARGV[i])
            redis.call('EXPIRE', KEYS[i], expiry)
        else
            over_capacity = over_capacity + 1
        end
    end
    return over_capacity
"""
_NEEDS = ("_group_key", "_map_channel_keys_to_connection", "consistent_hash", "connection", "group_expiry")


def can_pipeline(layer: Any) -> bool:
    return all(hasattr(layer, name) for name in _NEEDS)


async def publish_many(layer: Any, messages: list[tuple[str, dict[str, Any]]]) -> int:
    """Send each ``(group, message)`` to its group, in order; returns how many channels were full."""
    if not messages:
        return 0
    if not can_pipeline(layer):
        for group, message in messages:
            await layer.group_send(group, message)
        return 0
    members = await _members(layer, list(dict.fromkeys(group for group, _ in messages)), messages)
    calls: dict[int, list[tuple[list[str], list[Any]]]] = defaultdict(list)
    for group, message in messages:
        by_connection, key_message, key_capacity = layer._map_channel_keys_to_connection(
            members[group], message
        )
        for index, keys in by_connection.items():
            calls[index].append((keys, [key_message[k] for k in keys] + [key_capacity[k] for k in keys]))
    if not calls:  # nobody follows these groups outside the bus: one round trip in all
        return 0
    full = await asyncio.gather(*(_deliver(layer, index, batch) for index, batch in calls.items()))
    return sum(full)


async def _members(
    layer: Any, groups: list[str], messages: list[tuple[str, dict[str, Any]]]
) -> dict[str, list[str]]:
    """Each group's members, in the round trip that also publishes every message on the bus."""
    by_connection: dict[int, list[str]] = defaultdict(list)
    for group in groups:
        by_connection[layer.consistent_hash(group)].append(group)
    published: dict[int, list[tuple[str, str]]] = defaultdict(list)
    for group, message in messages:
        if "text" in message:
            published[frame_bus.shard(layer, group)].append((frame_bus.channel(group), message["text"]))
    members: dict[str, list[str]] = {}
    oldest = int(time.time()) - layer.group_expiry
    for index in dict.fromkeys([*by_connection, *published]):
        names = by_connection.get(index, [])
        pipe = layer.connection(index).pipeline(transaction=False)
        for name, text in published.get(index, []):
            pipe.publish(name, text)
        for group in names:
            key = layer._group_key(group)
            pipe.zremrangebyscore(key, min=0, max=oldest)
            pipe.zrange(key, 0, -1)
        replies = (await pipe.execute())[len(published.get(index, [])) :]
        for i, group in enumerate(names):
            members[group] = [name.decode("utf8") for name in replies[2 * i + 1]]
    return members


_last_score = 0.0


def _score() -> float:
    """A channel's messages are a sorted set scored by send time, and members with equal scores pop
    in the order of their (randomly prefixed) bytes: every message of a batch gets a later score."""
    global _last_score
    _last_score = max(time.time(), _last_score + 1e-5)
    return _last_score


async def _deliver(layer: Any, index: int, batch: list[tuple[list[str], list[Any]]]) -> int:
    pipe = layer.connection(index).pipeline(transaction=False)
    stale = int(time.time()) - int(layer.expiry)
    for keys, args in batch:
        for key in keys:
            pipe.zremrangebyscore(key, min=0, max=stale)
        pipe.eval(GROUP_SEND_LUA, len(keys), *keys, *args, _score(), layer.expiry)
    replies = await pipe.execute()
    return sum(r for r in replies[-len(batch) :] if isinstance(r, int)) if batch else 0
