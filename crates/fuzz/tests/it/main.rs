//! Integration tests of flysim-fuzz: a campaign over a toy target with a planted bug.

mod campaign;
