//! Asking a lock's task a question by message, and waiting for its reply
//! without waiting forever for a task that is gone.
//!
//! Why not just send, then await the reply: a task retires (drops its
//! receiver) once its channel is empty, and tokio's
//! `UnboundedSender::send` works in two steps, first counting the message
//! in, then pushing it onto the channel's list, while the receiver's drop
//! closes the channel and then drains the list. A send whose first step
//! comes before the close and whose push comes after the drain returns `Ok`,
//! and its message, with the reply's sender in it, stays in the channel
//! unread for as long as any sender lives, the asker's own included. The
//! asker then waited forever: the "count of contenders that got no answer"
//! of issue 52's hang (`postgres::postgres_backend_conforms`, one run in
//! about 170 under load, a probe counting a lock's contenders while the
//! lock's task retired after the last release).
//!
//! Messages sent through [`super::LocalLocks::send`] are pushed under the
//! registry's lock, where the task's retirement check also looks, so they
//! cannot be stranded. The questions here are sent without it (a question
//! must not start a task), so they wait for the reply and for the channel's
//! closing together.

use tokio::sync::{mpsc, oneshot};

use super::Message;

/// Sends `message`, which carries the sender of `answer`, to `task`, and
/// waits for the reply. `None` when the task is gone, including one that
/// retired as the message was sent (its receiver dropped: the channel is
/// closed).
///
/// # Cancellation safety
/// Cancel safe: a dropped call leaves at most an unread question.
pub(crate) async fn ask_task<T>(
    task: &mpsc::UnboundedSender<Message>,
    message: Message,
    mut answer: oneshot::Receiver<T>,
) -> Option<T> {
    if task.send(message).is_err() {
        return None;
    }
    tokio::select! {
        biased;
        reply = &mut answer => reply.ok(),
        // The task replies before it drops its receiver: a reply sent just
        // before the close is read here rather than lost to the race.
        () = task.closed() => answer.try_recv().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(reply: oneshot::Sender<usize>) -> Message {
        Message::Count { reply }
    }

    #[tokio::test]
    async fn a_reply_is_read() {
        let (task, mut receiver) = mpsc::unbounded_channel();
        let (reply, answer) = oneshot::channel();
        let replying = tokio::spawn(async move {
            if let Some(Message::Count { reply }) = receiver.recv().await {
                let _ = reply.send(3);
            }
            // The task ends right after it replied: the reply still counts.
            drop(receiver);
        });
        assert_eq!(ask_task(&task, count(reply), answer).await, Some(3));
        replying.await.expect("the task");
    }

    #[tokio::test]
    async fn a_question_to_a_task_that_is_gone_is_not_waited_for() {
        let (task, receiver) = mpsc::unbounded_channel::<Message>();
        drop(receiver);
        let (reply, answer) = oneshot::channel();
        assert_eq!(ask_task(&task, count(reply), answer).await, None);
    }

    /// The stranded case: the message is in the channel, unread, the
    /// channel lives (the asker's sender), and no task will read it. Made
    /// here by closing the receiver once the message is in, without reading
    /// it; a bare `answer.await` waits forever on this.
    #[tokio::test]
    async fn a_question_left_unread_in_a_closed_channel_is_not_waited_for() {
        let (task, mut receiver) = mpsc::unbounded_channel::<Message>();
        let (reply, answer) = oneshot::channel();
        let asking = tokio::spawn({
            let task = task.clone();
            async move { ask_task(&task, count(reply), answer).await }
        });
        // Wait until the question is in, unread.
        while receiver.is_empty() {
            tokio::task::yield_now().await;
        }
        // Closed, its message unread and its reply never sent: what a
        // receiver dropped between a send's two steps leaves.
        receiver.close();
        let asked = tokio::time::timeout(std::time::Duration::from_secs(10), asking).await;
        assert_eq!(asked.expect("not waited for").expect("the asker"), None);
        drop(receiver);
    }
}
