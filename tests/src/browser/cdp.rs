//! The few DevTools-protocol calls the page tests need: a tab of its own
//! (`Target.createTarget`, attached with a flat session), navigate, evaluate
//! JavaScript (awaiting promises, values returned as JSON), screenshot.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long one protocol call may take before the test fails.
const CALL_LIMIT: Duration = Duration::from_secs(30);

/// One tab of the browser.
pub struct Page {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    session: String,
    next_id: u64,
}

impl Page {
    /// Connects to the browser at `endpoint` and opens a blank tab.
    ///
    /// # Panics
    /// When the browser does not answer.
    pub(super) async fn open(endpoint: &str) -> Page {
        let (socket, _) = tokio_tungstenite::connect_async(endpoint)
            .await
            .expect("connect to chromium's DevTools");
        let mut page = Page {
            socket,
            session: String::new(),
            next_id: 0,
        };
        let target = page
            .call("Target.createTarget", json!({ "url": "about:blank" }))
            .await;
        let target = target["targetId"].as_str().expect("a target id").to_owned();
        let attached = page
            .call(
                "Target.attachToTarget",
                json!({ "targetId": target, "flatten": true }),
            )
            .await;
        page.session = attached["sessionId"]
            .as_str()
            .expect("a session id")
            .to_owned();
        page.call("Page.enable", json!({})).await;
        page.call("Runtime.enable", json!({})).await;
        page.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": 1100, "height": 700, "deviceScaleFactor": 1, "mobile": false }),
        )
        .await;
        page
    }

    /// Sends `method` (to the tab once attached) and returns its result;
    /// events in between are skipped.
    ///
    /// # Panics
    /// On a protocol error, or no answer within [`CALL_LIMIT`].
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !self.session.is_empty() {
            message["sessionId"] = Value::String(self.session.clone());
        }
        self.socket
            .send(Message::text(message.to_string()))
            .await
            .expect("send to chromium");
        let answer = tokio::time::timeout(CALL_LIMIT, async {
            while let Some(frame) = self.socket.next().await {
                let Ok(Message::Text(text)) = frame else {
                    continue;
                };
                let Ok(value) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                if value["id"].as_u64() == Some(id) {
                    return value;
                }
            }
            panic!("chromium closed the DevTools connection during {method}");
        })
        .await
        .unwrap_or_else(|_| panic!("chromium did not answer {method} within {CALL_LIMIT:?}"));
        assert!(
            answer.get("error").is_none(),
            "{method} failed: {}",
            answer["error"]
        );
        answer["result"].clone()
    }

    /// Navigates to `url` and waits until its document has loaded.
    pub async fn navigate(&mut self, url: &str) {
        self.call("Page.navigate", json!({ "url": url })).await;
        let loaded = self
            .wait_for(
                "document.readyState === 'complete'",
                Duration::from_secs(10),
            )
            .await;
        assert!(loaded, "{url} did not load within 10 s");
    }

    /// The value of the JavaScript `expression` (a promise is awaited).
    ///
    /// # Panics
    /// When it throws.
    pub async fn evaluate(&mut self, expression: &str) -> Value {
        let result = self
            .call(
                "Runtime.evaluate",
                json!({ "expression": expression, "returnByValue": true, "awaitPromise": true }),
            )
            .await;
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression} threw: {}",
            result["exceptionDetails"]
        );
        result["result"]["value"].clone()
    }

    /// Whether the JavaScript `condition` became true within `limit`:
    /// checked at once and then on every change of the document (a
    /// `MutationObserver` in the page, so no polling interval delays it).
    pub async fn wait_for(&mut self, condition: &str, limit: Duration) -> bool {
        let expression = format!(
            "new Promise((resolve) => {{
                const check = () => {{ try {{ return !!({condition}); }} catch (e) {{ return false; }} }};
                if (check()) return resolve(true);
                const observer = new MutationObserver(() => {{ if (check()) {{ observer.disconnect(); resolve(true); }} }});
                observer.observe(document, {{ subtree: true, childList: true, characterData: true, attributes: true }});
                setTimeout(() => {{ observer.disconnect(); resolve(check()); }}, {});
            }})",
            limit.as_millis()
        );
        self.evaluate(&expression).await == Value::Bool(true)
    }

    /// A PNG of the tab as it is shown.
    pub async fn screenshot(&mut self) -> Vec<u8> {
        use base64::Engine;
        let shot = self
            .call("Page.captureScreenshot", json!({ "format": "png" }))
            .await;
        base64::engine::general_purpose::STANDARD
            .decode(shot["data"].as_str().expect("screenshot data"))
            .expect("base64 PNG")
    }
}
