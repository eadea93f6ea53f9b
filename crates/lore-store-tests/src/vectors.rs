//! Stored vectors and the recall index's saved state.

use crate::fixture::*;
use lore_core::Error;
use lore_core::id::LessonId;
use lore_core::model::LessonStatus;
use lore_core::ports::store::{LessonVector, Record, Store};
use lore_core::scope::Scope;

/// A stored vector reads back bit for bit with its embedder and source hash; a second one for
/// the same lesson replaces it; listings follow the scope.
pub fn vectors_roundtrip_bit_for_bit_and_are_replaced(store: &dyn Store) {
    let f = Fixture::new();
    let hr = f.lesson(&f.hr, LessonStatus::Approved, 0);
    let finance = f.lesson(&f.finance, LessonStatus::Approved, 1);
    write(
        store,
        vec![Record::Lesson(hr.clone()), Record::Lesson(finance.clone())],
    );
    let first = vector_of(&hr.id, 5, 0.3);
    let other = vector_of(&finance.id, 5, -0.7);
    store.put_vectors(&[first.clone(), other.clone()]).unwrap();
    let of = |scope: &Scope, id: &LessonId| {
        store
            .vectors(scope, None)
            .unwrap()
            .into_iter()
            .filter(|v| &v.lesson == id)
            .collect::<Vec<_>>()
    };
    assert_eq!(of(&Scope::unrestricted(), &hr.id), vec![first.clone()]);
    assert_eq!(
        store
            .vectors(&Scope::unrestricted(), Some(std::slice::from_ref(&hr.id)))
            .unwrap(),
        vec![first],
        "only the lessons asked for"
    );
    assert_eq!(of(&f.both_scope(), &finance.id), vec![other]);
    assert!(
        of(&f.hr_scope(), &finance.id).is_empty(),
        "out of scope vectors are not listed"
    );
    let mut second = vector_of(&hr.id, 3, 9.5);
    second.embedder.name = "another-embedder".into();
    second.source_hash = 1;
    store.put_vectors(std::slice::from_ref(&second)).unwrap();
    assert_eq!(of(&f.hr_scope(), &hr.id), vec![second]);
}

/// A batch with a vector of an unknown lesson, of the wrong length or with a NaN is refused
/// whole, naming the problem.
pub fn bad_vectors_are_refused_and_nothing_is_written(store: &dyn Store) {
    let f = Fixture::new();
    let lesson = f.lesson(&f.hr, LessonStatus::Approved, 0);
    write(store, vec![Record::Lesson(lesson.clone())]);
    let good = vector_of(&lesson.id, 4, 0.5);
    let unknown = vector_of(&f.lesson(&f.hr, LessonStatus::Approved, 1).id, 4, 0.5);
    let result = store.put_vectors(&[good.clone(), unknown.clone()]);
    assert!(
        matches!(&result, Err(Error::NotFound { id, .. }) if *id == unknown.lesson.to_string()),
        "{result:?}"
    );
    let mut short = good.clone();
    short.vector.pop();
    let result = store.put_vectors(&[good.clone(), short]);
    assert!(
        matches!(&result, Err(Error::Invalid { why, .. }) if why.contains('3') && why.contains('4')),
        "{result:?}"
    );
    let mut nan = good.clone();
    nan.vector[1] = f32::NAN;
    let result = store.put_vectors(&[good, nan]);
    assert!(matches!(result, Err(Error::Invalid { .. })), "{result:?}");
    let stored: Vec<LessonVector> = store
        .vectors(&f.hr_scope(), None)
        .unwrap()
        .into_iter()
        .filter(|v| v.lesson == lesson.id)
        .collect();
    assert!(stored.is_empty(), "nothing of a refused batch is stored");
}

/// Index state reads back as written, is replaced by a second write, and needs a name.
pub fn index_state_roundtrips(store: &dyn Store) {
    let f = Fixture::new();
    let key = format!("test-state-{}", f.tag);
    assert_eq!(store.index_state(&key).unwrap(), None);
    let value: Vec<u8> = (0..=255u8).chain([0, 0, 7]).collect();
    store.set_index_state(&key, &value).unwrap();
    assert_eq!(store.index_state(&key).unwrap(), Some(value));
    store.set_index_state(&key, b"second").unwrap();
    assert_eq!(store.index_state(&key).unwrap(), Some(b"second".to_vec()));
    assert!(matches!(
        store.set_index_state(" ", b"x"),
        Err(Error::Invalid { .. })
    ));
}

/// A store with its own vector search finds the nearest lessons of one embedder, through its
/// index as by a scan, never another embedder's vectors, and refuses a query of the wrong
/// dimension by name. Stores without one say so and are not tested further.
pub fn nearest_stored_finds_the_nearest_of_one_embedder(store: &dyn Store) {
    let f = Fixture::new();
    let lessons: Vec<_> = (0..4)
        .map(|i| f.lesson(&f.hr, LessonStatus::Approved, i))
        .collect();
    write(store, lessons.iter().cloned().map(Record::Lesson).collect());
    let directions = [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.9, 0.1, 0.0],
        [1.0, 0.0, 0.0],
    ];
    let mut vectors: Vec<LessonVector> = lessons
        .iter()
        .zip(directions)
        .map(|(l, d)| {
            let mut v = vector_of(&l.id, 3, 0.0);
            v.embedder.name = format!("nearest-{}", f.tag);
            v.vector = d.to_vec();
            v
        })
        .collect();
    // The last lesson points the same way, but its vector is another embedder's.
    vectors[3].embedder.name = format!("other-{}", f.tag);
    store.put_vectors(&vectors).unwrap();
    let embedder = vectors[0].embedder.clone();
    if !store.prepare_nearest(&embedder).unwrap() {
        assert_eq!(
            store
                .nearest_stored(&embedder, &[1.0, 0.0, 0.0], 2, true)
                .unwrap(),
            None
        );
        return;
    }
    store.prepare_nearest(&embedder).unwrap();
    for exact in [true, false] {
        let found = store
            .nearest_stored(&embedder, &[1.0, 0.0, 0.0], 2, exact)
            .unwrap()
            .unwrap();
        assert_eq!(
            found,
            vec![lessons[0].id.clone(), lessons[2].id.clone()],
            "exact: {exact}"
        );
    }
    let err = store
        .nearest_stored(&embedder, &[1.0, 0.0], 2, false)
        .unwrap_err();
    assert!(matches!(err, Error::Invalid { .. }), "{err:?}");
    assert!(err.to_string().contains("dimensions"), "{err}");
}
