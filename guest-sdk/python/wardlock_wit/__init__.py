"""The WIT worlds wardlock's Python guests are built against: `command`
(0.1.0) and `command2` (0.2.0, with `wardlock_asyncio`), with their WASI
dependencies. `guest-sdk/package.sh` copies them in from `plugins/wit` when it
builds the wheel. Build a guest with

    componentize-py -d "$(python -m wardlock_wit)" -w command2 componentize app -o app.wasm
"""

import os

PATH = os.path.dirname(os.path.abspath(__file__))
