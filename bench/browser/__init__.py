"""The browser-path benchmark: POST of a message -> frames on the websocket, against a stamped upstream."""
