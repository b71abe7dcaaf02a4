"""`trialbook serve` and the HTML reports (the optional `web` extra: starlette, uvicorn, jinja2, matplotlib)."""
