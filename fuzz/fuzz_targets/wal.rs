//! Reads arbitrary bytes as a WAL (or MANIFEST) log, in strict and in skip-corruption mode, and
//! decodes every record it yields as a WAL header or a write batch (with a version-2 record's
//! flags taken out); then walks it with the event reader recovery uses, which must report every
//! damaged stretch inside the file and always reach the end.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::fs::SequentialFile;
use strata::internal::wal::reader::LogEvent;
use strata::internal::wal::LogReader;
use strata::internal::wal_header::{RecordFlags, WalHeader};

struct Bytes(Vec<u8>, usize);

impl SequentialFile for Bytes {
    fn read(&mut self, buf: &mut [u8]) -> strata::Result<usize> {
        let rest = self.0.get(self.1..).unwrap_or_default();
        let n = rest.len().min(buf.len());
        buf[..n].copy_from_slice(&rest[..n]);
        self.1 += n;
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    for skip in [false, true] {
        let mut reader = LogReader::new(Box::new(Bytes(data.to_vec(), 0)), skip);
        let mut records = 0;
        while let Ok(Some(mut record)) = reader.read_record() {
            match WalHeader::decode(&record) {
                Some(header) => drop(header),
                None => {
                    RecordFlags::take(2, &mut record);
                    drop(strata::batch::decode_payload(&record))
                }
            }
            records += 1;
            if records > 100_000 {
                break;
            }
        }
    }
    let mut events = LogReader::new(Box::new(Bytes(data.to_vec(), 0)), false);
    let mut out = Vec::new();
    for _ in 0..200_000 {
        match events.next_event(&mut out) {
            Ok(LogEvent::End) | Err(_) => return,
            Ok(LogEvent::Damage(d)) => assert!(d.offset < data.len() as u64, "{d:?} beyond the file"),
            Ok(LogEvent::Record) => assert!(events.last_record_end() <= data.len() as u64),
        }
    }
    panic!("the event reader did not reach the end of {} bytes", data.len());
});
