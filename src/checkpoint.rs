//! Checkpoints: state only (particles, frame index, scene hash, format version), checksummed.
//!
//! STUB (skeleton): the checkpoint issue fills this in.
