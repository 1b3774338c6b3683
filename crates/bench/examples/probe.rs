use std::time::Instant;
use ts_bench::throughput::{all_pages, run_pipeline, Page};
fn time(p: &Page) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..200 {
            std::hint::black_box(run_pipeline(p));
        }
        best = best.min(t.elapsed().as_secs_f64() / 200.0);
    }
    best * 1e6
}
fn main() {
    let pages = all_pages();
    for name in ["next_nonce", "next", "homepage"] {
        let p = pages.iter().find(|p| p.name == name).unwrap().clone();
        let mut q = p.clone();
        let s =
            String::from_utf8_lossy(&p.bytes).replace("self.__next_f.push(", "self.__next_X.push(");
        q.bytes = s.into_bytes();
        q.rsc = false;
        let a = time(&p);
        let b = time(&q);
        println!("{name}: {} bytes, pipeline {:.1} us ({:.0} MB/s), without Flight marker {:.1} us ({:.0} MB/s)", p.bytes.len(), a, p.bytes.len() as f64 / a, b, q.bytes.len() as f64 / b);
    }
}
