//! Bucket lifecycle rules and the engine that applies them. It acts through the object
//! layer like any other client, never below it.
