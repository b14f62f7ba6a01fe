//! Bounded channels whose capacity is counted in bytes.
//!
//! A [`Sender`] admits an item while the bytes in flight (sent, not yet received) plus the
//! item's [`Weighted::weight`] stay within the capacity; an item heavier than the whole
//! capacity is admitted alone, once the channel is empty, so that progress never stops. A full
//! channel makes `send` wait: that is how a slow consumer slows its producers down
//! (backpressure) while memory stays bounded by the sum of the channel capacities (plus at
//! most one oversized item each).
//!
//! Each channel keeps a [`Gauge`] of the bytes in flight and their maximum, for metrics and
//! tests.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

use crate::batch::Batch;

/// Something with a size in bytes that counts against a channel's capacity.
pub trait Weighted {
    /// The size in bytes.
    fn weight(&self) -> usize;
}

impl Weighted for Batch {
    fn weight(&self) -> usize {
        self.byte_size()
    }
}

impl<T: Weighted, E> Weighted for Result<T, E> {
    fn weight(&self) -> usize {
        self.as_ref().map_or(0, T::weight)
    }
}

/// Bytes in flight in a channel: now and at most so far.
#[derive(Debug, Default)]
pub struct Gauge {
    current: AtomicU64,
    max: AtomicU64,
}

impl Gauge {
    /// Bytes in flight now.
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Relaxed)
    }

    /// The most bytes that were ever in flight at once.
    pub fn max(&self) -> u64 {
        self.max.load(Ordering::Relaxed)
    }

    fn add(&self, n: u64) {
        let now = self.current.fetch_add(n, Ordering::Relaxed) + n;
        self.max.fetch_max(now, Ordering::Relaxed);
    }

    fn sub(&self, n: u64) {
        self.current.fetch_sub(n, Ordering::Relaxed);
    }
}

/// The receiving side is gone; the item is given back.
#[derive(Debug, thiserror::Error)]
#[error("channel closed")]
pub struct Closed<T>(pub T);

struct Item<T> {
    value: T,
    weight: u64,
    _permit: Option<OwnedSemaphorePermit>,
}

/// The sending side of a byte-bounded channel. Cloning makes another producer.
pub struct Sender<T> {
    tx: mpsc::UnboundedSender<Item<T>>,
    permits: Arc<Semaphore>,
    capacity: u32,
    gauge: Arc<Gauge>,
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            tx: self.tx.clone(),
            permits: self.permits.clone(),
            capacity: self.capacity,
            gauge: self.gauge.clone(),
        }
    }
}

/// The receiving side of a byte-bounded channel: a [`Stream`] of the items in send order.
pub struct Receiver<T> {
    rx: mpsc::UnboundedReceiver<Item<T>>,
    gauge: Arc<Gauge>,
}

/// A channel admitting up to `capacity` bytes in flight (at least 1; at most `u32::MAX`).
pub fn channel<T: Weighted>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let capacity = capacity.clamp(1, u32::MAX as usize) as u32;
    let (tx, rx) = mpsc::unbounded_channel();
    let gauge = Arc::new(Gauge::default());
    (
        Sender {
            tx,
            permits: Arc::new(Semaphore::new(capacity as usize)),
            capacity,
            gauge: gauge.clone(),
        },
        Receiver { rx, gauge },
    )
}

impl<T: Weighted> Sender<T> {
    /// Sends `value`, waiting while the channel is too full to admit it.
    pub async fn send(&self, value: T) -> Result<(), Closed<T>> {
        let weight = value.weight() as u64;
        let need = weight.min(self.capacity as u64) as u32;
        let permit = if need == 0 {
            None
        } else {
            match self.permits.clone().acquire_many_owned(need).await {
                Ok(p) => Some(p),
                Err(_) => return Err(Closed(value)),
            }
        };
        self.gauge.add(weight);
        let item = Item {
            value,
            weight,
            _permit: permit,
        };
        self.tx.send(item).map_err(|e| {
            self.gauge.sub(weight);
            Closed(e.0.value)
        })
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

impl<T> Sender<T> {
    /// The channel's gauge of bytes in flight.
    pub fn gauge(&self) -> &Arc<Gauge> {
        &self.gauge
    }

    /// The capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.capacity as usize
    }
}

impl<T> Receiver<T> {
    /// The next item, or `None` once every sender is gone and the channel is empty.
    pub async fn recv(&mut self) -> Option<T> {
        std::future::poll_fn(|cx| self.poll_recv(cx)).await
    }

    fn poll_recv(&mut self, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.rx.poll_recv(cx).map(|o| {
            o.map(|item| {
                self.gauge.sub(item.weight);
                item.value
            })
        })
    }

    /// The channel's gauge of bytes in flight.
    pub fn gauge(&self) -> &Arc<Gauge> {
        &self.gauge
    }
}

impl<T> Stream for Receiver<T> {
    type Item = T;
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<T>> {
        self.poll_recv(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct W(usize);
    impl Weighted for W {
        fn weight(&self) -> usize {
            self.0
        }
    }

    #[tokio::test]
    async fn admits_within_capacity_and_one_oversized() {
        let (tx, mut rx) = channel::<W>(10);
        tx.send(W(6)).await.unwrap();
        tx.send(W(4)).await.unwrap();
        // Full: the next send waits until something is received.
        let blocked = tokio::time::timeout(std::time::Duration::from_millis(50), tx.send(W(1)));
        assert!(blocked.await.is_err());
        assert_eq!(rx.recv().await.unwrap().0, 6);
        tx.send(W(1)).await.unwrap();
        assert_eq!(tx.gauge().current(), 5);
        assert_eq!(rx.recv().await.unwrap().0, 4);
        assert_eq!(rx.recv().await.unwrap().0, 1);
        // An item bigger than the capacity goes alone.
        tx.send(W(50)).await.unwrap();
        assert_eq!(tx.gauge().max(), 50);
        drop(rx);
        assert!(tx.send(W(1)).await.is_err());
    }
}
