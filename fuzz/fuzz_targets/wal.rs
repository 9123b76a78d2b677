//! Reads arbitrary bytes as a WAL (or MANIFEST) log, in strict and in skip-corruption mode, and
//! decodes every record it yields as a WAL header or a write batch.
#![no_main]
use libfuzzer_sys::fuzz_target;
use strata::fs::SequentialFile;
use strata::wal::LogReader;

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
        while let Ok(Some(record)) = reader.read_record() {
            match strata::wal_header::WalHeader::decode(&record) {
                Some(header) => drop(header),
                None => drop(strata::batch::decode_payload(&record)),
            }
            records += 1;
            if records > 100_000 {
                break;
            }
        }
    }
});
