"""Errors the web side reports to the user as they are, with their reason."""


class ChatError(Exception):
    """Base: a request we refuse, with a message fit to show."""


class MessageRejected(ChatError):
    pass


class RunAlreadyActive(ChatError):
    pass


class ProviderUnavailable(ChatError):
    pass
