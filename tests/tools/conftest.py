from tools_helpers import ctx, sandbox, toolbox  # noqa: F401  (fixtures live with the helpers)
